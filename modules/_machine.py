"""What this machine offers to the pre-flight checks of modules (Module.preflight): the pretrained
weights files in the folder torch.hub reads them from. A worker reports it in its heartbeat
(designer/pipelines/heartbeat.py), so the web process, which may run elsewhere, checks against
the machines that will run the modules. Plain Python: torch is never imported for this."""
from __future__ import annotations

import os
from pathlib import Path

from sdk.declarations import Machine

THIS_MACHINE = "this machine"
MAX_FILES = 1000  # a heartbeat names at most this many weights files


def hub_checkpoints() -> Path:
    """The folder torch.hub reads weights from (torch.hub.get_dir() / "checkpoints"), without torch:
    TORCH_HOME, else XDG_CACHE_HOME/torch, else ~/.cache/torch; then hub/checkpoints."""
    home = os.environ.get("TORCH_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "torch")
    return Path(os.path.expanduser(home)) / "hub" / "checkpoints"


def shown(folder: str) -> str:
    """A folder as a message writes it: under the home folder as ~/..."""
    home = os.path.expanduser("~")
    return f"~{folder[len(home):]}" if home != "/" and folder.startswith(home + os.sep) else folder


def this_machine(name: str = THIS_MACHINE) -> Machine:
    """This machine's weights folder and the files in it (none when it does not exist)."""
    folder = hub_checkpoints()
    try:
        files = sorted(p.name for p in folder.iterdir() if p.is_file())[:MAX_FILES]
    except OSError:
        files = []
    return Machine(name, shown(str(folder)), frozenset(files))
