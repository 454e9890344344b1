import sys, functools, http.server, threading
from pathlib import Path
from playwright.sync_api import sync_playwright
site = Path(sys.argv[1]); out = Path(sys.argv[2]); out.mkdir(exist_ok=True)
pages = sys.argv[3:]
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
h.log_message = lambda *a: None
class Q(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Q, directory=str(site)))
threading.Thread(target=httpd.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{httpd.server_address[1]}"
with sync_playwright() as p:
    b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox","--headless"])
    for w in (1280, 390):
        for scheme in ("light", "dark"):
            pg = b.new_page(viewport={"width": w, "height": 900}, color_scheme=scheme)
            pg.on("console", lambda m: print("console", m.type, m.text))
            pg.on("pageerror", lambda e: print("pageerror", e))
            for name in pages:
                pg.goto(f"{url}/{name}")
                sw = pg.evaluate("document.documentElement.scrollWidth")
                print(w, scheme, name, "scrollWidth", sw)
                pg.screenshot(path=str(out / f"{name.replace('/','_')}-{w}-{scheme}.png"), full_page=False)
b.close()
