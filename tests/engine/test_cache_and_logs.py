import subprocess
import sys

from designer.engine import cache, logstore
from tests.conftest import ROOT


def test_a_cache_key_changes_with_each_thing_it_depends_on():
    base = cache.cache_key("toy_add", 1, {"amount": 1}, {"input": "x:1:out"})
    assert base == cache.cache_key("toy_add", 1, {"amount": 1}, {"input": "x:1:out"})
    assert base != cache.cache_key("toy_add", 2, {"amount": 1}, {"input": "x:1:out"})
    assert base != cache.cache_key("toy_add", 1, {"amount": 2}, {"input": "x:1:out"})
    assert base != cache.cache_key("toy_add", 1, {"amount": 1}, {"input": "x:2:out"})
    assert base != cache.cache_key("toy_source", 1, {"amount": 1}, {"input": "x:1:out"})
    # a distributed module's run settings: each of node count and process count per node
    one = cache.cache_key("toy_add", 1, {"amount": 1}, {"input": "x:1:out"}, {"node_count": 1, "process_count_per_node": 1})
    assert one != cache.cache_key("toy_add", 1, {"amount": 1}, {"input": "x:1:out"}, {"node_count": 2, "process_count_per_node": 1})
    assert one != cache.cache_key("toy_add", 1, {"amount": 1}, {"input": "x:1:out"}, {"node_count": 1, "process_count_per_node": 2})
    # a component's code digest
    assert base != cache.cache_key("toy_add", 1, {"amount": 1}, {"input": "x:1:out"}, code="digest")


def test_a_log_is_read_from_an_offset_without_splitting_characters(tmp_path):
    log = tmp_path / "log.txt"
    log.write_bytes("héllo wörld\n".encode())
    first = logstore.read_from(log, 0, max_bytes=2)  # 'h' + first byte of 'é'
    assert first.text == "h" and first.next_offset == 1
    rest = logstore.read_from(log, first.next_offset)
    assert rest.text == "éllo wörld\n" and rest.next_offset == rest.size
    with log.open("ab") as f:
        f.write(b"more\n")
    assert logstore.read_from(log, rest.next_offset).text == "more\n"
    assert logstore.read_from(tmp_path / "missing.txt", 5).text == ""


def test_the_engine_imports_neither_django_nor_torch():
    code = ("import sys, designer.engine.graph, designer.engine.executor, designer.engine.scheduler, "
            "designer.engine.cache, designer.engine.logstore, modules.catalogue; modules.catalogue.load(); "
            "bad = [m for m in ('django', 'torch', 'celery') if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
