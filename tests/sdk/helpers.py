"""A stand-in for the engine's context, enough for the format writers: output folders and meta."""
from pathlib import Path

from sdk.context import InputArtifact
from sdk.formats.meta import read_meta, write_meta


class FakeContext:
    def __init__(self, node_dir: Path, port_type: str):
        self.node_dir, self.port_type, self.meta = Path(node_dir), port_type, {}

    def output_dir(self, port: str) -> Path:
        path = self.node_dir / port
        path.mkdir(parents=True, exist_ok=True)
        return path

    def set_meta(self, port: str, **fields) -> None:
        self.meta.setdefault(port, {}).update(fields)

    def finish(self, port: str) -> InputArtifact:
        """Write the _meta.yaml as the engine does; return the output as a downstream module gets it."""
        path = self.output_dir(port)
        write_meta(path, self.port_type, self.meta.get(port))
        meta = read_meta(path)
        return InputArtifact(path, meta["type"], meta)


def other(tmp_path: Path, port_type: str = "ImageDirectory") -> InputArtifact:
    """A directory of another type than the one a reader expects."""
    path = tmp_path / "other"
    path.mkdir(exist_ok=True)
    write_meta(path, port_type)
    return InputArtifact(path, port_type, read_meta(path))
