"""Before submit, the page says that a pretrained model's weights are not on this machine (the
default ResNet failed the first run of every offline user), at the node, in the problems bar and
under Pretrained; unticking Pretrained clears it."""
import pytest

from modules._vision_models import WEIGHTS_FILES, hub_checkpoints
from tests.e2e.helpers import node, open_designer
from tests.pipes import node as n
from tests.pipes import pipeline

pytestmark = pytest.mark.browser


def test_missing_pretrained_weights_are_shown_before_submit(page, users):
    if (hub_checkpoints() / WEIGHTS_FILES["resnet18"]).exists():
        pytest.skip("this machine has the weights (the page server reads the same hub folder)")
    open_designer(page, users["owner"], pipeline([n("r", "resnet", model_name="resnet18")], []))
    bar = page.locator("#problems")
    bar.locator("text=resnet18-f37072fd.pth are not on this machine").wait_for()
    assert "untick Pretrained, or copy the file there" in bar.inner_text()
    # named by its module's label, not "node 'r'" (defect 9)
    assert bar.locator("li").inner_text().startswith("ResNet, parameter 'pretrained': Pretrained: the weights")
    assert node(page, "r").locator("[data-problems]").count() == 1
    box = node(page, "r").bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 15)
    error = page.locator("#error-pretrained")
    error.locator("text=Pretrained: the weights resnet18-f37072fd.pth").wait_for()
    page.shot("weights-missing")
    page.uncheck("#node-form [data-param=pretrained]")
    page.wait_for_selector("#problems >> text=No problems: ready to submit.")
    assert error.inner_text() == ""

    # the default ResNet, just dropped: the way out is one click in the problems bar
    page.check("#node-form [data-param=pretrained]")  # Pretrained again
    fix = bar.locator("button.fix")
    fix.wait_for()
    assert fix.inner_text() == "Untick Pretrained"
    page.shot("weights-missing-fix")
    fix.click()
    page.wait_for_selector("#problems >> text=No problems: ready to submit.")
    assert not page.is_checked("#node-form [data-param=pretrained]")
    page.wait_for_function("!window.designer.toDraft().nodes[0].parameters.pretrained")
