"""The dark theme (issue 15): the pages follow the system's colour scheme (prefers-color-scheme).
Dark, the designer's palette, pane, canvas and nodes are dark with light text that reads (a
contrast ratio from the colours the browser computes); light, they are as they always were."""
import re

import pytest
from playwright.sync_api import expect

from designer.pipelines.models import NodeRun, Pipeline, Run
from designer.pipelines.runs import service as runs
from tests.e2e.helpers import node, open_designer, select
from tests.e2e.test_compare import trainer
from tests.e2e.test_layout import training_draft
from tests.e2e.test_registry_pages import seed_model

pytestmark = pytest.mark.browser


def rgb(css):
    """'rgb(1, 2, 3)', 'rgba(1, 2, 3, 0.5)' or '#010203' -> (1, 2, 3)."""
    if css.startswith("#"):
        digits = css[1:] if len(css) > 4 else "".join(c * 2 for c in css[1:])
        return tuple(int(digits[i:i + 2], 16) for i in (0, 2, 4))
    r, g, b = (float(x) for x in re.findall(r"[\d.]+", css)[:3])
    return r, g, b


def luminance(css):
    """The relative luminance of a colour (WCAG 2)."""
    def channel(c):
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb(css))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b):
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def style(page, selector, prop):
    return page.eval_on_selector(selector, f"e => getComputedStyle(e).{prop}")


def backdrop(page, selector):
    """The colour an element is drawn on: its own background, or the nearest one behind it."""
    return page.eval_on_selector(selector, """e => {
        for (; e; e = e.parentElement) {
            const c = getComputedStyle(e).backgroundColor;
            if (c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') return c;
        }
        return 'rgb(255, 255, 255)';
    }""")


def dark(css):
    return luminance(css) < 0.05


def reads(page, text_selector, background):
    """The text of an element against a background: a contrast ratio of at least 4.5 (WCAG AA)."""
    ratio = contrast(style(page, text_selector, "color"), background)
    assert ratio >= 4.5, f"{text_selector} on {background}: {ratio:.1f}"


def with_a_failed_run(owner, draft_pipeline):
    run = Run.objects.create(owner=owner, pipeline=draft_pipeline, name="run 1", snapshot=draft_pipeline.draft, status="failed")
    for nid, status in (("dataset", "completed"), ("convert", "completed"), ("split", "failed")):
        NodeRun.objects.create(run=run, node_id=nid, kind=nid, status=status, error="split: not enough images" if status == "failed" else "")
    return run


def test_the_designer_is_dark_when_the_system_is(page, users):
    page.emulate_media(color_scheme="dark")
    p = open_designer(page, users["owner"], training_draft(users["owner"]))
    body = style(page, "body", "backgroundColor")
    for part in ("body", ".palette", ".pane", ".toolbar", "#canvas .x6-graph-background", "#minimap"):
        assert dark(style(page, part, "backgroundColor")), f"{part} is not dark"
    reads(page, "body", body)
    reads(page, ".palette summary", style(page, ".palette", "backgroundColor"))
    reads(page, ".palette-item", style(page, ".palette-item", "backgroundColor"))
    # the nodes on the canvas: a dark box, its label light
    rect = '#canvas g[data-cell-id="train"] > rect[data-kind]'
    box_fill = style(page, rect, "fill")
    assert dark(box_fill), box_fill
    label = page.locator('#canvas g[data-cell-id="train"] text', has_text="Train PyTorch Model").first
    ratio = contrast(label.evaluate("e => getComputedStyle(e).fill"), box_fill)
    assert ratio >= 4.5, ratio
    # the selected node's form: dark fields, light text
    select(page, "train")
    field = "#node-form [data-param=epochs]"
    assert dark(style(page, field, "backgroundColor"))
    assert contrast(style(page, field, "color"), style(page, field, "backgroundColor")) >= 4.5
    reads(page, "#node-form .help", style(page, ".pane", "backgroundColor"))
    # Chart.js writes in the theme's colours (its text is drawn in a canvas, out of CSS's reach)
    assert luminance(page.evaluate("Chart.defaults.color")) > 0.4
    page.shot("designer-dark")

    # a run's banner and statuses, a note, and the Runs tab's table
    with_a_failed_run(users["owner"], p)
    page.reload()
    page.wait_for_selector("html[data-designer-ready=true]")
    page.wait_for_selector("#run-banner[data-status=failed]")
    reads(page, "#run-banner", style(page, "#run-banner", "backgroundColor"))
    assert dark(style(page, "#run-banner", "backgroundColor"))
    node(page, "train").click(position={"x": 60, "y": 15})
    page.keyboard.press("Control+c")
    expect(page.locator("#banner")).to_be_visible()
    assert dark(style(page, "#banner", "backgroundColor"))
    reads(page, "#banner", style(page, "#banner", "backgroundColor"))
    page.click(".pane [role=tab][data-tab=runs]")
    page.wait_for_selector("#tab-runs table")
    reads(page, "#tab-runs td", style(page, ".pane", "backgroundColor"))
    page.shot("designer-dark-run")


def test_the_pipelines_list_and_a_models_page_are_dark_too(page, users):
    owner = users["owner"]
    page.emulate_media(color_scheme="dark")
    model = seed_model(owner)
    Run.objects.filter(pipeline__owner=owner).update(status="failed")
    page.goto(f"{page.base}/")
    card = style(page, ".card", "backgroundColor")
    assert dark(style(page, "body", "backgroundColor")) and dark(card)
    reads(page, "#pipelines td", card)
    reads(page, "#pipelines a", card)
    reads(page, "#recent-runs .status-failed", card)
    page.shot("pipelines-dark")
    page.goto(f"{page.base}/models/")
    reads(page, "#models a", style(page, ".card", "backgroundColor"))
    page.locator("#models a", has_text=model.name).click()
    page.wait_for_selector("html[data-model-loaded]")
    card = style(page, "section.version", "backgroundColor")
    assert dark(card)
    reads(page, "section.version h2", card)
    reads(page, "section.version .badge", style(page, "section.version .badge", "backgroundColor"))
    reads(page, "dl.facts dt", card)
    page.shot("model-dark")
    # the other pages: dark, their text read
    for name, url in (("data", "/data/"), ("models", "/models/"), ("endpoints", "/endpoints/"), ("components", "/components/"), ("sweeps", "/sweeps/"),
                      ("compute", "/compute"), ("tokens", "/account/tokens/")):
        page.goto(f"{page.base}{url}")
        background = style(page, "body", "backgroundColor")
        assert dark(background), name
        reads(page, "main h1, main h2", backdrop(page, "main h1, main h2"))
        page.shot(f"{name}-dark")


def test_charts_write_in_the_themes_colours(page, users):
    """Chart.js draws in a canvas, out of CSS's reach: its ticks, titles and grid take the theme's colours."""
    owner = users["owner"]
    p = Pipeline.objects.create(owner=owner, name="trainer", draft=trainer(3, 1))
    a = runs.submit(owner, trainer(3, 1), pipeline=p, name=p.name, inline=True)
    b = runs.submit(owner, trainer(5, 2), pipeline=p, name=p.name, inline=True)
    page.emulate_media(color_scheme="dark")
    page.goto(f"{page.base}/runs/compare?runs={a.id}&runs={b.id}")
    page.wait_for_selector("html[data-compare-ready=true]")
    chart = "#curves canvas[data-metric='Toy training: loss']"
    ticks, grid, legend = page.evaluate("""(sel) => { const c = Chart.getChart(document.querySelector(sel));
        return [c.scales.x.options.ticks.color, c.scales.y.options.grid.color, c.legend.options.labels.color]; }""", chart)
    card = backdrop(page, chart)
    assert contrast(ticks, card) >= 4.5 and contrast(legend, card) >= 4.5, (ticks, legend, card)
    assert luminance(grid) > luminance(card)
    page.locator(chart).scroll_into_view_if_needed()
    page.shot("compare-dark")


def brightest_near_end(page, trial):
    """The brightest pixel on a trial's line of the parallel chart, a little before its last point."""
    from io import BytesIO

    from PIL import Image

    x, y = page.evaluate("""(n) => {
        const line = document.querySelector(`.parallel polyline[data-trial='${n}']`);
        const [a, b] = line.getAttribute('points').split(' ').slice(-2).map((p) => p.split(',').map(Number));
        const t = 12 / Math.hypot(a[0] - b[0], a[1] - b[1]);
        const box = line.ownerSVGElement.getBoundingClientRect();
        return [box.x + b[0] + (a[0] - b[0]) * t, box.y + b[1] + (a[1] - b[1]) * t];
    }""", trial)
    png = page.screenshot(clip={"x": x - 3, "y": y - 3, "width": 7, "height": 7})
    img = Image.open(BytesIO(png)).convert("RGB")
    return max(sum(img.getpixel((i, j))) for i in range(img.width) for j in range(img.height))


def test_the_sweeps_parallel_chart_reads_in_dark(page, users):
    """The parallel coordinates (an SVG of charts/parallel.js, drawn here from a made-up sweep): its
    words light, and the best trial's line the brightest (its ramp goes dark for a white page)."""
    page.emulate_media(color_scheme="dark")
    page.goto(f"{page.base}/compute")
    page.evaluate("""async () => {
        const { drawParallel } = await import('/static/js/charts/parallel.js');
        const card = document.createElement('section'); card.className = 'card';
        const box = document.createElement('div'); box.className = 'parallel'; card.append(box);
        document.querySelector('main').prepend(card);
        const trials = [1, 2, 3, 4, 5].map((i) => ({ number: i, value: 0.5 + i / 10, best: i === 5, values: { lr: i / 100 } }));
        drawParallel(box, { trials, swept: ['lr'], config: { parameter_space: [] }, primary_metric: { name: 'accuracy', goal: 'maximize' } });
    }""")
    card = backdrop(page, ".parallel")
    label = page.eval_on_selector(".parallel text.axis-label", "e => getComputedStyle(e).fill")
    tick = page.eval_on_selector(".parallel text.tick", "e => getComputedStyle(e).fill")
    assert contrast(label, card) >= 4.5 and contrast(tick, card) >= 4.5, (label, tick, card)
    # the lines as drawn (a CSS filter turns the ramp over): the brightest pixel near each line's end
    assert brightest_near_end(page, 5) > brightest_near_end(page, 1) + 150
    page.shot("parallel-dark")


def test_light_mode_is_unchanged(page, users):
    page.emulate_media(color_scheme="light")
    open_designer(page, users["owner"], training_draft(users["owner"]))
    assert style(page, "body", "backgroundColor") == "rgb(246, 248, 250)"
    assert style(page, ".palette", "backgroundColor") == "rgb(255, 255, 255)"
    assert style(page, ".pane", "backgroundColor") == "rgb(255, 255, 255)"
    assert style(page, "#canvas .x6-graph-background", "backgroundColor") == "rgb(246, 248, 250)"
    assert style(page, '#canvas g[data-cell-id="train"] > rect[data-kind]', "fill") == "rgb(255, 255, 255)"
    assert style(page, "body", "color") == "rgb(27, 31, 36)"
    assert page.evaluate("Chart.defaults.color") == "#666"
    page.shot("designer-light")
