"""MkDocs hook: the reference pages made from the code, at every build, so that they cannot drift.

    <!-- generated: modules -->           every module type, from its declaration (modules/module_catalogue.py)
    <!-- generated: component-format -->  examples/components/README.md, the component file's reference
    <!-- generated: pipeline-schema -->   designer/engine/pipeline.schema.json, the pipeline file's schema

mkdocs.yml names this file under `hooks:`; imports nothing of Django (the registry is plain Python).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules() -> str:
    sys.path.insert(0, str(ROOT))
    from modules import catalogue as module_catalogue

    catalogue = module_catalogue.load(component_dirs=(ROOT / "examples" / "components",))
    rows = sorted((m.describe() for m in catalogue), key=lambda d: (d["category"], d["label"]))
    out = []
    def ports(d: dict, side: str) -> str:
        return ", ".join(f"{p['label']} ({p['type']}{', optional' if p.get('optional') else ''})" for p in d[side]) or "none"

    for d in rows:
        params = "; ".join(f"{p['label']} ({p['type']}, default {json.dumps(p.get('default'))})" for p in d["params"]) or "none"
        origin = f" (component: `{Path(d['component']['origin']).relative_to(ROOT) if Path(d['component']['origin']).is_absolute() else d['component']['origin']}`)" if d.get("component") else ""
        out.append(f"## {d['label']}\n\n`{d['kind']}` v{d['version']}, {d['category']}{origin}"
                   f"{', distributed (Run settings)' if d['distributed'] else ''}. {d['description'] or ''}\n\n"
                   f"- Inputs: {ports(d, 'inputs')}\n- Outputs: {ports(d, 'outputs')}\n- Parameters: {params}\n"
                   + (f"- Metrics: {', '.join(d['metrics'])}\n" if d["metrics"] else ""))
    return "\n".join(out)


def _component_format() -> str:
    text = (ROOT / "examples" / "components" / "README.md").read_text()
    text = text.split("\n", 1)[1]  # its own title: the page has one
    return re.sub(r"(?m)^(#{1,5}) ", r"#\1 ", text)


def _pipeline_schema() -> str:
    schema = json.loads((ROOT / "designer" / "engine" / "pipeline.schema.json").read_text())
    return "```json\n" + json.dumps(schema, indent=2) + "\n```"


MAKERS = {"modules": _modules, "component-format": _component_format, "pipeline-schema": _pipeline_schema}


def on_page_markdown(markdown, page, config, files):
    for name, make in MAKERS.items():
        marker = f"<!-- generated: {name} -->"
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown
