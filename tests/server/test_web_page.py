"""The web page in a real browser: headless Chromium (Debian's `chromium` + `chromium-driver`,
driven by Selenium) searches the demo collection in Korean, draws the similarity heatmap and the
collection map, shows a document's text on hover, and searches an image collection (a tiny random
CLIP) by text and by an uploaded image. Screenshots go to `test-artifacts/`.

`.ci/run` installs the browser (`make browser`); without it these tests are skipped, never passed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from munjang._util.bundled import demo_documents
from munjang.applications.demo import demo_collection
from munjang.server import ServerSettings, create_app
from tests.helpers.paths import REPO
from tests.helpers.server import live_server

ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None, reason="needs Debian's chromium and chromium-driver (make browser)"
)


@pytest.fixture(scope="module")
def page_url(encoder, tmp_path_factory) -> Iterator[str]:
    folder = demo_collection(tmp_path_factory.mktemp("demo") / "collection", encoder)
    settings = ServerSettings(models={"all-MiniLM-L6-v2": encoder}, collection_paths={"demo": folder})
    with live_server(create_app(settings)) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--lang=ko-KR",
    ):
        options.add_argument(flag)
    options.add_argument("--window-size=1280,1000")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(DRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver, condition, timeout: float = 60.0):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition)


def screenshot(driver, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"web-page-{name}.png"
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 5_000
    return path


def painted_pixels(driver, canvas_id: str) -> int:
    return int(
        driver.execute_script(
            "const c = document.getElementById(arguments[0]);"
            "const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
            "let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n;",
            canvas_id,
        )
    )


def severe_console_messages(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_korean_search_heatmap_and_map(browser, page_url):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver = browser
    driver.get(page_url + "/")
    wait_for(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
    assert "1 collection(s)" in driver.find_element(By.ID, "server-status").text

    # search: a Korean query, hybrid results with scores and the matched terms marked
    box = driver.find_element(By.ID, "query")
    box.send_keys("서울에 비가 온다")
    box.send_keys(Keys.ENTER)
    wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results li")) > 0)
    first = driver.find_elements(By.CSS_SELECTOR, "#results li")[0]
    assert "비" in first.find_element(By.CLASS_NAME, "result-text").text
    marks = [m.text for m in first.find_elements(By.TAG_NAME, "mark")]
    assert marks, "the matched terms should be highlighted"
    assert float(first.find_element(By.CLASS_NAME, "score").text) > 0
    assert "results from demo (hybrid)" in driver.find_element(By.ID, "search-status").text

    # beside the hits, the query's analysis: each BM25 token, its part of speech and its rule, the
    # tokens a hit matched marked; a hit's "analysis" shows how its passage was read
    def analysis_rows(d):
        if not (d.find_element(By.ID, "analysis").get_attribute("data-rendered") or "0").isdigit():
            return []
        rows = d.find_elements(By.CSS_SELECTOR, "#analysis-tokens li")
        return [
            [r.find_element(By.CLASS_NAME, c).text for c in ("token", "tag", "rule")]
            + ["matched" in (r.get_attribute("class") or "")]
            for r in rows
        ]

    rows = wait_for(driver, analysis_rows)
    assert ["서울", "NNP", "morpheme", True] in rows, rows
    assert all(tag and rule for _, tag, rule, _ in rows)
    assert "query: 서울에 비가 온다" in driver.find_element(By.ID, "analysis-of").text
    first.find_element(By.CLASS_NAME, "analyze-hit").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "analysis-of").text.startswith("passage of"))
    rows = wait_for(driver, analysis_rows)
    hit_text = first.find_element(By.CLASS_NAME, "result-text").text
    assert all(token in hit_text for token, tag, _, _ in rows if tag.startswith("NN")), rows
    chips = {chip.text for chip in first.find_elements(By.CLASS_NAME, "term")}  # the hit's matched terms
    assert {token for token, *_, matched in rows if matched} == chips & {r[0] for r in rows} != set()
    screenshot(driver, "search")

    # similarity playground: six sentences -> a 6 x 6 heatmap actually painted
    driver.find_element(By.CSS_SELECTOR, "nav button[data-tab=similarity]").click()
    driver.find_element(By.ID, "similarity-run").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "heatmap").get_attribute("data-rendered") == "true")
    assert driver.find_element(By.ID, "heatmap").get_attribute("data-cells") == "36"
    assert painted_pixels(driver, "heatmap") > 20_000
    screenshot(driver, "heatmap")

    # map: every demo document is a point; hovering one shows its text
    driver.find_element(By.CSS_SELECTOR, "nav button[data-tab=map]").click()
    driver.find_element(By.ID, "map-run").click()
    canvas = driver.find_element(By.ID, "map")
    points = str(len(demo_documents()))
    wait_for(driver, lambda d: d.find_element(By.ID, "map").get_attribute("data-points") == points)
    assert painted_pixels(driver, "map") > 1_000
    point = driver.execute_script("const p = mapState.points[0]; return [p.sx, p.sy, p.text];")
    size = canvas.size
    ActionChains(driver).move_to_element_with_offset(
        canvas, int(point[0] - size["width"] / 2), int(point[1] - size["height"] / 2)
    ).perform()
    tooltip = driver.find_element(By.ID, "tooltip")
    wait_for(driver, lambda d: tooltip.is_displayed())
    assert point[2] in tooltip.text
    screenshot(driver, "map")
    assert severe_console_messages(driver) == []


def test_page_reports_api_errors_in_words(browser, page_url):
    from selenium.webdriver.common.by import By

    driver = browser
    driver.get(page_url + "/")
    wait_for(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
    driver.find_element(By.CSS_SELECTOR, "nav button[data-tab=similarity]").click()
    driver.find_element(By.ID, "sentences").clear()
    driver.find_element(By.ID, "similarity-run").click()
    status = driver.find_element(By.ID, "similarity-status")
    assert "at least two sentences" in status.text
    assert "error" in status.get_attribute("class")


def test_a_long_document_shows_its_matched_passage(browser, e5_path, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from munjang import Collection, load_encoder

    encoder = load_encoder(str(e5_path))
    sentences = ["서울에는 한강이 흐른다.", "제주도에는 한라산이 있다.", "부산에는 해운대가 있다."] * 6
    page = " ".join(sentences)
    col = Collection.create(tmp_path / "pages", str(e5_path), encoder=encoder, chunking={"max_tokens": 24})
    col.add(["guide"], [page], [{"title": "여행 안내"}])
    col.close()
    settings = ServerSettings(
        models={"multilingual-e5-small": encoder}, collection_paths={"pages": tmp_path / "pages"}
    )
    with live_server(create_app(settings)) as url:
        browser.get(url + "/")
        wait_for(browser, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
        box = browser.find_element(By.ID, "query")
        box.send_keys("한라산")
        box.send_keys(Keys.ENTER)
        wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results li")) > 0)
        hits = browser.find_elements(By.CSS_SELECTOR, "#results li")
        assert len(hits) == 1  # one document, however many of its passages matched
        text = hits[0].find_element(By.CLASS_NAME, "result-text").text
        where = hits[0].find_element(By.CLASS_NAME, "passage").text
        assert "한라산" in text and len(text) < len(page)
        start, end = (int(x) for x in where.rsplit(" ", 1)[1].split("–"))
        assert where.startswith("passage ") and page[start:end].strip() == text
        assert severe_console_messages(browser) == []


def test_image_tab_searches_by_text_and_by_an_uploaded_image(browser, tmp_path):
    from selenium.webdriver.common.by import By

    import munjang
    from tests.helpers.tiny_clip import image_collection, save_st_clip

    clip = munjang.load_encoder(save_st_clip(tmp_path / "clip"), device="cpu")
    folder, files = image_collection(tmp_path / "pictures", clip)
    settings = ServerSettings(models={"tiny-clip": clip}, collection_paths={"pictures": folder})
    with live_server(create_app(settings)) as url:
        browser.get(url + "/")
        wait_for(browser, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
        browser.find_element(By.CSS_SELECTOR, "nav button[data-tab=images]").click()
        assert browser.find_element(By.ID, "image-collection").get_attribute("value") == "pictures"
        grid = browser.find_element(By.ID, "image-results")

        browser.find_element(By.ID, "image-query").send_keys("the cat")
        browser.find_element(By.CSS_SELECTOR, "#image-form button[type=submit]").click()
        wait_for(browser, lambda d: grid.get_attribute("data-rendered") == str(len(files)))
        loaded = "return [...document.querySelectorAll('#image-results img')].map((i) => i.naturalWidth);"
        wait_for(browser, lambda d: all(w > 0 for w in d.execute_script(loaded)))
        assert "by text" in browser.find_element(By.ID, "image-status").text

        browser.find_element(By.ID, "image-file").send_keys(str(files[2]))
        wait_for(browser, lambda d: d.find_element(By.ID, "image-preview").is_displayed())
        browser.find_element(By.CSS_SELECTOR, "#image-form button[type=submit]").click()
        wait_for(browser, lambda d: "by an image" in d.find_element(By.ID, "image-status").text)
        wait_for(browser, lambda d: grid.get_attribute("data-rendered") == str(len(files)))
        first = browser.find_elements(By.CSS_SELECTOR, "#image-results figure")[0]
        assert first.get_attribute("data-id") == files[2].name
        assert float(first.find_element(By.CLASS_NAME, "score").text) == pytest.approx(1.0, abs=1e-3)
        wait_for(browser, lambda d: all(w > 0 for w in d.execute_script(loaded)))
        screenshot(browser, "images")
        assert severe_console_messages(browser) == []
