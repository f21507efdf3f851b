"""Builders of pipeline documents for tests."""
from designer.engine.schema_migrations import CURRENT


def node(nid, kind, **params):
    return {"id": nid, "kind": kind, "parameters": params}


def link(src, dst, src_port="out", dst_port="input", lid=None):
    return {"id": lid or f"{src}-{dst}-{dst_port}", "from": {"node": src, "port": src_port}, "to": {"node": dst, "port": dst_port}}


def pipeline(nodes, links, name="test pipeline"):
    return {"schema_version": CURRENT, "name": name, "parameters": [], "nodes": nodes, "links": links, "layout": {}}


def chain(n, sleep=0.0, name="chain"):
    nodes = [node("n0", "toy_source", value=1)] + [node(f"n{i}", "toy_add", amount=1, sleep=sleep) for i in range(1, n)]
    links = [link(f"n{i - 1}", f"n{i}") for i in range(1, n)]
    return pipeline(nodes, links, name)


def fan_out(hold, branches, name="test pipeline"):
    """src -> b1 ... bN: `branches` branches that run on only once the file `hold` is gone."""
    return pipeline([node("src", "toy_source", value=10)]
                    + [node(f"b{i}", "toy_add", amount=i, hold_file=str(hold)) for i in range(1, branches + 1)],
                    [link("src", f"b{i}") for i in range(1, branches + 1)], name)


def two_branches(fail_left=False, sleep=0.0, hold="", held="left"):
    """src -> left -> left2 ; src -> right : two branches independent after the source.
    `hold`: a file; node `held` (or each node of a tuple) runs on only once it is gone (a test sees it
    running first)."""
    doc = pipeline(
        [node("src", "toy_source", value=10), node("left", "toy_add", amount=1, fail=fail_left, sleep=sleep),
         node("left2", "toy_add", amount=1), node("right", "toy_add", amount=5, sleep=sleep)],
        [link("src", "left"), link("left", "left2"), link("src", "right")],
    )
    for n in doc["nodes"] if hold else []:
        if n["id"] in ((held,) if isinstance(held, str) else held):
            n["parameters"]["hold_file"] = hold
    return doc


def out_path(stored):
    """The folder of a node's output as a NodeRun stores it (a key of the artifact store), in a
    store that is a folder."""
    from designer.pipelines.runs import artifacts

    return artifacts.local_output(stored)
