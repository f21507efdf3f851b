"""Small real modules used by the engine tests (loaded through DESIGNER_EXTRA_MODULES)."""
import time

from modules.base import Bool, Float, ImageDirectory, Int, Module, ModuleError, Port, ScoredDataset


def _read(inp) -> int:
    return int((inp.path / "value.txt").read_text())


class ToySource(Module):
    kind = "toy_source"
    label = "Toy source"
    category = "Tests"
    outputs = [Port("Out", ImageDirectory)]
    params = [Int("Value", default=1, min=0, max=1000, help="the number written"), Float("Sleep", default=0.0, min=0)]

    def run(self, ctx):
        time.sleep(ctx.params["sleep"])
        (ctx.output_dir("out") / "value.txt").write_text(str(ctx.params["value"]))
        ctx.log(f"wrote {ctx.params['value']}")


class ToyAdd(Module):
    kind = "toy_add"
    label = "Toy add"
    category = "Tests"
    inputs = [Port("Input", ImageDirectory), Port("Extra", ImageDirectory, optional=True)]
    outputs = [Port("Out", ImageDirectory)]
    params = [Int("Amount", default=1, min=-100, max=100), Float("Sleep", default=0.0, min=0, max=600),
              Bool("Fail", default=False, help="raise an error instead")]

    def run(self, ctx, input, extra=None):
        for _ in range(int(ctx.params["sleep"] * 20)):
            time.sleep(0.05)
        if ctx.params["fail"]:
            raise ModuleError("asked to fail (parameter Fail is on)")
        total = _read(input) + ctx.params["amount"] + (_read(extra) if extra else 0)
        ctx.metric("total", total, step=1)
        (ctx.output_dir("out") / "value.txt").write_text(str(total))
        ctx.log(f"total {total}")


class ToySink(Module):
    kind = "toy_sink"
    label = "Toy sink"
    category = "Tests"
    inputs = [Port("Scores", ScoredDataset)]
    outputs = []
    params = []

    def run(self, ctx, scores):
        ctx.log("sink")
