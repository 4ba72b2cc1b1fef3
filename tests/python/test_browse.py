"""The browse and search pages in a real browser: Debian's headless Chromium driven by
chromedriver (scripts/test.sh installs both when missing). `soif serve` runs on a catalog
built from the fixtures plus the hostile-value fixtures (tests/fixtures/web/hostile.soif);
the test goes home -> search -> results -> a record -> its download links, checks that
hostile values render as text (no alert, no script run), and saves screenshots under
target/browser-screenshots/."""

import json
import os
import shutil
import tempfile
import urllib.request

import pytest

from conftest import FIXTURES, ROOT, run, serve, soif_bin

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SHOTS = ROOT / "target" / "browser-screenshots"

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """`soif serve` on `web.db`: the seed documents, a Harvest gatherer's records and
    the hostile values."""
    d = tmp_path_factory.mktemp("browse")
    db = d / "web.db"
    run(soif_bin(), "convert", FIXTURES / "rfc2655" / "documents.soif", FIXTURES / "rfc2655" / "dublin-core.soif",
        FIXTURES / "harvest" / "ecrc-93-10.soif", FIXTURES / "web" / "hostile.soif",
        "--lenient", "--on-error", "skip", "--to", "sqlite", "-o", db, "-q")
    yield from serve("--db", f"web={db}")


@pytest.fixture(scope="module")
def browser():
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        pytest.fail("chromium and chromium-driver are missing (scripts/test.sh installs them)")
    profile = tempfile.mkdtemp(prefix="soif-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}", "--window-size=1100,1400"]:
        opts.add_argument(flag)
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    driver = webdriver.Chrome(options=opts, service=service)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def shot(driver, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))


def no_alert(driver):
    try:
        text = driver.switch_to.alert.text
    except NoAlertPresentException:
        return
    pytest.fail(f"a hostile value ran script: alert({text!r})")


def no_script_ran(driver):
    no_alert(driver)
    # The page has no script of its own (a record page's JSON-LD is data, never run); a
    # value turned into one would be another <script> or an element with an event handler.
    scripts = driver.find_elements(By.TAG_NAME, "script")
    assert [s.get_attribute("type") for s in scripts] in ([], ["application/ld+json"])
    assert driver.find_elements(By.CSS_SELECTOR, "img") == []
    assert driver.execute_script("return window.__xss === undefined")


def test_home_search_record_downloads(site, browser):
    b = browser
    b.get(site + "/")
    no_script_ran(b)
    assert b.find_element(By.TAG_NAME, "h1").text == "Catalogs"
    assert "DOCUMENT" in b.find_element(By.TAG_NAME, "table").text
    assert "Latest load" in b.page_source
    shot(b, "01-home")

    # The search form: labelled fields, submitted from the keyboard.
    box = b.find_element(By.ID, "c1-q")
    assert b.find_element(By.CSS_SELECTOR, "label[for='c1-q']").text == "Keywords"
    box.send_keys("hostile")
    box.submit()
    no_script_ran(b)
    assert "/web/-/search" in b.current_url
    rows = b.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(rows) == 2
    # The hostile title is text, shown as written.
    link = b.find_element(By.PARTIAL_LINK_TEXT, "Hostile page")
    assert link.text.startswith("<script>alert('title')</script>")
    shot(b, "02-results")

    link.click()
    no_script_ran(b)
    assert b.find_element(By.TAG_NAME, "h1").text.startswith("<script>")
    body = b.find_element(By.TAG_NAME, "main").text
    assert "javascript:alert('href')" in body
    assert "Mallory <img src=x onerror=alert(1)>" in body
    assert "binary value, 10 bytes" in body
    # Only the allowed schemes are links.
    hrefs = [a.get_attribute("href") or "" for a in b.find_elements(By.TAG_NAME, "a")]
    assert not [h for h in hrefs if h.lower().startswith("javascript:")], hrefs
    # Long values folded, unfolded from the keyboard.
    details = b.find_element(By.TAG_NAME, "details")
    assert details.get_attribute("open") is None
    summary = details.find_element(By.TAG_NAME, "summary")
    summary.send_keys("\n")
    assert details.get_attribute("open") is not None
    shot(b, "03-record")

    # The page's schema.org description, as a crawler's browser finds it: the hostile
    # title is a value in it, and it did not end the script element early.
    ld = [json.loads(s.get_attribute("textContent"))
          for s in b.find_elements(By.CSS_SELECTOR, 'script[type="application/ld+json"]')]
    assert len(ld) == 1
    assert ld[0]["@type"] == "CreativeWork" and ld[0]["@id"] == "http://hostile.example/xss"
    assert ld[0]["name"].startswith("<script>alert('title')</script>")

    # The download links answer with the record in each form.
    formats = {a.text: a.get_attribute("href") for a in b.find_elements(By.CSS_SELECTOR, "ul.formats a")}
    assert set(formats) == {"SOIF", "JSON", "Dublin Core RDF/XML", "OAI-PMH GetRecord"}
    expect = {"SOIF": b"@DOCUMENT { http://hostile.example/xss", "JSON": b'"template": "DOCUMENT"',
              "Dublin Core RDF/XML": b"<rdf:RDF", "OAI-PMH GetRecord": b"<GetRecord>"}
    for name, href in formats.items():
        with urllib.request.urlopen(href, timeout=10) as r:
            data = r.read()
        assert expect[name] in data, (name, data[:300])
    # The JSON opened in the browser is shown as data, not run.
    b.get(formats["JSON"])
    no_alert(b)
    assert "hostile.example" in b.find_element(By.TAG_NAME, "body").text
    b.back()

    # The binary value downloads byte for byte.
    value = b.find_element(By.LINK_TEXT, "download").get_attribute("href")
    with urllib.request.urlopen(value, timeout=10) as r:
        assert r.read() == b"\x00\xff\xfe\x80binary"


def test_phone_width_and_hostile_url_record(site, browser):
    b = browser
    b.set_window_size(390, 844)
    try:
        b.get(site + "/web/DOCUMENT")
        no_script_ran(b)
        # No horizontal scrolling on a phone.
        assert b.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
        b.find_element(By.LINK_TEXT, "JS URL record").click()
        no_script_ran(b)
        # Its javascript: URL is shown as code, not a link.
        assert b.find_element(By.CSS_SELECTOR, "main p code").text == "javascript:alert('url')"
        shot(b, "04-phone-record")
    finally:
        b.set_window_size(1100, 1400)


def test_a_facet_narrows_the_list(site, browser):
    """A template's list shows its facets; clicking a host narrows the list to that host's
    records (a stable URL), and clicking it again removes the narrowing."""
    from test_facets import wait_for_facets
    wait_for_facets(site + "/web")
    b = browser
    b.get(site + "/web/DOCUMENT")
    no_script_ran(b)
    before = len(b.find_elements(By.CSS_SELECTOR, "tbody tr"))
    hosts = b.find_element(By.CSS_SELECTOR, ".facet[data-facet='host']")
    item = hosts.find_element(By.XPATH, ".//li[a[normalize-space()='home.netscape.com']]")
    count = int(item.find_element(By.CLASS_NAME, "count").text)
    assert 0 < count < before
    item.find_element(By.TAG_NAME, "a").click()
    no_script_ran(b)
    assert b.current_url.endswith("/web/DOCUMENT?host=home.netscape.com")
    rows = b.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(rows) == count
    assert all("home.netscape.com" in r.text for r in rows)
    selected = b.find_element(By.CSS_SELECTOR, ".facet[data-facet='host'] li.selected")
    assert selected.find_element(By.TAG_NAME, "a").get_attribute("aria-current") == "true"
    shot(b, "05-facet-narrowed")
    selected.find_element(By.TAG_NAME, "a").click()
    assert b.current_url.endswith("/web/DOCUMENT")
    assert len(b.find_elements(By.CSS_SELECTOR, "tbody tr")) == before
