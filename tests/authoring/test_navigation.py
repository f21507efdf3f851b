"""The top bar of every page: a link to each section, the one shown marked for the eye and for
screen readers (aria-current)."""
import re

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url, section", [("/", "Pipelines"), ("/jobs/", "Jobs"), ("/data/", "Data"), ("/models/", "Models"), ("/endpoints/", "Endpoints"),
                                          ("/components/", "Components"), ("/sweeps/", "Sweeps"), ("/compute", "Compute")])
def test_every_page_links_every_section_and_marks_its_own(owner_client, url, section):
    html = owner_client.get(url).content.decode()
    links = re.findall(r'<a class="compute-link" href="([^"]+)"( aria-current="page")?>([^<]+)</a>', html)
    assert [text for _, _, text in links] == ["Pipelines", "Jobs", "Data", "Models", "Endpoints", "Components", "Sweeps", "Compute"]
    assert [text for _, current, text in links if current] == [section]
