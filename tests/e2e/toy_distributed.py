"""A toy module that offers Run settings (distributed), known only to the browser tests' server."""
from sdk.declarations import Choice, ImageDirectory, Module, Port


class ToyDistributed(Module):
    kind = "toy_pane_distributed"
    label = "Toy distributed (pane)"
    category = "Tests"
    inputs = [Port("Input", ImageDirectory)]
    outputs = [Port("Out", ImageDirectory)]
    params = [Choice("Mode", default="fast", choices=("fast", "slow"), help="how to go")]
    distributed = True

    def run(self, ctx, input):
        ctx.log("distributed toy")
