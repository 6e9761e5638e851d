//go:build integration

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/crewlet/crewlet/engine/snapshot"
)

// chromiumOnce finds headless Chromium for the dashboard test, installing
// Debian's package when it is missing and the test runs as root with
// apt-get (as CI does); otherwise the test fails saying how to install it.
var (
	chromiumOnce sync.Once
	chromiumPath string
	chromiumErr  string
)

func chromium(t *testing.T) string {
	t.Helper()
	chromiumOnce.Do(func() {
		find := func() string {
			for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
				if p, err := exec.LookPath(name); err == nil {
					return p
				}
			}
			return ""
		}
		if chromiumPath = find(); chromiumPath != "" {
			return
		}
		apt, err := exec.LookPath("apt-get")
		if err != nil || os.Geteuid() != 0 {
			chromiumErr = "no Chromium on PATH: install Debian's chromium package (apt-get install chromium) to run the dashboard's browser test"
			return
		}
		if out, err := exec.Command(apt, "install", "-y", "--no-install-recommends", "chromium").CombinedOutput(); err != nil {
			chromiumErr = "apt-get install chromium: " + err.Error() + "\n" + string(out)
			return
		}
		if chromiumPath = find(); chromiumPath == "" {
			chromiumErr = "apt-get installed chromium but it is not on PATH"
		}
	})
	if chromiumErr != "" {
		t.Fatal(chromiumErr)
	}
	return chromiumPath
}

// TestDashboardInABrowser drives the dashboard of a real `crewlet serve`
// in headless Chromium: log in with the token, see an item written over
// MCP appear without a reload, switch the read level and read the level
// and lag beside the rows, and open every view. With
// CREWLET_SCREENSHOTS=DIR it saves a screenshot of each view there.
func TestDashboardInABrowser(t *testing.T) {
	s := StartServe(t, t.TempDir())
	defer s.Stop(t)
	c := s.HTTPClient(t)
	Call(t, c, "create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	Call(t, c, "create_work_item", map[string]any{"project": "ENG", "title": "Ship the dashboard"})
	Call(t, c, "create_space", map[string]any{"key": "OPS", "name": "Operations"})
	page := Call(t, c, "create_page", map[string]any{"space": "OPS", "title": "Runbook", "body": "Restart the node."})
	pageID := page["page"].(map[string]any)["id"].(string)

	checkDashboardEdge(t, s)
	b := newBrowser(t)
	b.logIn(s)

	// An item written over MCP appears on the open board without a reload.
	Call(t, c, "create_work_item", map[string]any{"project": "ENG", "title": "Appears on its own"})
	b.run("see a new item appear", chromedp.WaitVisible(css(`a.card[data-key="ENG-2"]`)))

	// The level chooser changes the level every view reads at.
	b.run("switch to linearizable",
		chromedp.SetValue(css(`#level`), "linearizable"),
		b.eval(`document.getElementById('level').dispatchEvent(new Event('change'))`),
		chromedp.WaitVisible(css(`.readinfo[data-level="linearizable"]`)),
	)
	if info := b.text(`.readinfo[data-level="linearizable"]`); !strings.Contains(info, "lag 0 records") {
		t.Errorf("a linearizable read's info = %q, want lag 0 records", info)
	}
	b.typing(func() {
		Call(t, c, "create_work_item", map[string]any{"project": "ENG", "title": "Moves the positions"})
	})
	takeBackup(t, s)
	b.views(pageID)
	b.progress(s)

	// A purge is on the audit trail's page, with who asked.
	Call(t, c, "purge_work_item", map[string]any{"key": "ENG-2"})
	b.run("open the audit trail", chromedp.Click(css(`#nav-audit`)), chromedp.WaitVisible(css(`td[data-col="what"]`)), b.shot("audit"))
	if got := b.text(`main`); !strings.Contains(got, "purge-ENG-2") || !strings.Contains(got, "operator") {
		t.Errorf("the audit view says %q, want the purge by the operator", got)
	}
}

// css is a CSS selector (chromedp reads a bare string as a search).
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// browser is one headless Chromium tab.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

func newBrowser(t *testing.T) *browser {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	// The first run starts the browser and must carry no deadline (it
	// would stop the browser); each step after it gets its own.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return &browser{t: t, ctx: bctx, shots: os.Getenv("CREWLET_SCREENSHOTS")}
}

// run runs steps within the call budget; on failure it says what the page
// showed, since a refusal is rendered in it.
func (b *browser) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, callTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		sctx, cancel := context.WithTimeout(b.ctx, callTimeout)
		defer cancel()
		page, perr := chromedp.Run(sctx, chromedp.Evaluate[string](`document.body.innerText`))
		if perr != nil {
			page = perr.Error()
		}
		b.t.Fatalf("%s: %v\nthe page showed:\n%s", what, err, page)
	}
}

// text is the visible text of the first element sel matches, once one
// does. It is read in the page in the same evaluation that finds the
// element: the watch may redraw the view at any moment, and a node found
// by one call to the browser and read by the next could be gone by then
// ("No node with given id found").
func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, callTimeout)
	defer cancel()
	// An array, so an element with no text is found all the same.
	got, err := chromedp.Run(ctx, chromedp.Poll[[]string](`(() => { const el = document.querySelector(`+strconv.Quote(sel)+`); return el ? [el.innerText] : null; })()`))
	if err != nil || len(got) != 1 {
		b.t.Fatalf("text of %s: %v %v", sel, got, err)
	}
	return got[0]
}

func (b *browser) eval(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[chromedp.Void](expr)(ctx, tg)
		return err
	})
}

// shot saves a PNG of the whole page as name.png when screenshots are on.
func (b *browser) shot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if b.shots == "" {
			return nil
		}
		buf, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(b.shots, name+".png"), buf, 0o600)
	})
}

// logIn is refused with a wrong token, in words, then logs in with the
// node's and sees the board at stale with its level and lag.
func (b *browser) logIn(s *Serve) {
	b.run("log in with a wrong token",
		chromedp.Navigate(s.BaseURL+"/"),
		chromedp.WaitVisible(css(`#token`)),
		chromedp.SendKeys(css(`#token`), "not-the-token"),
		chromedp.Click(css(`#login button`)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`document.getElementById('login-error').textContent.length > 0`)(ctx, tg)
			return err
		}),
	)
	if msg := b.text(`#login-error`); !strings.Contains(msg, "token") {
		b.t.Errorf("a wrong token's message = %q, want one about the token", msg)
	}
	b.run("log in and see the board",
		chromedp.Navigate(s.BaseURL+"/"),
		chromedp.WaitVisible(css(`#token`)),
		chromedp.SendKeys(css(`#token`), s.Token),
		chromedp.Click(css(`#login button`)),
		chromedp.WaitVisible(css(`a.card[data-key="ENG-1"]`)),
		b.shot("board"),
	)
	if info := b.text(`.readinfo[data-level="stale"]`); !strings.Contains(info, "level: stale") || !strings.Contains(info, "lag ") {
		b.t.Errorf("the board's read info = %q, want its level and lag", info)
	}
}

// typing types into the search box, has write() move the node's
// positions so the watch redraws the view, and sees what was typed still
// in the box, with the caret, once the box is a new one; then goes back to
// the board.
func (b *browser) typing(write func()) {
	b.run("type a search", chromedp.Click(css(`#nav-search`)), chromedp.WaitVisible(css(`input[name="q"]`)),
		chromedp.SendKeys(css(`input[name="q"]`), "dash"),
		// A mark on this box, which a redrawn view's box does not carry.
		b.eval(`document.querySelector('input[name="q"]').dataset.mark = 'typed'`))
	write()
	b.run("see the view redrawn", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](`document.querySelector('input[name="q"]') !== null && document.querySelector('input[name="q"]').dataset.mark === undefined`)(ctx, tg)
		return err
	}))
	ctx, cancel := context.WithTimeout(b.ctx, callTimeout)
	defer cancel()
	kept, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const q = document.querySelector('input[name="q"]'); return q.value + '|' + (document.activeElement === q) + '|' + q.selectionStart; })()`))
	if err != nil {
		b.t.Fatalf("read the search box: %v", err)
	}
	if kept != "dash|true|4" {
		b.t.Errorf("after a redraw the search box (value|focused|caret) = %q, want what was typed, focused, the caret at its end: \"dash|true|4\"", kept)
	}
	b.run("back to the board", chromedp.Click(css(`#nav-board`)), chromedp.WaitVisible(css(`a.card[data-key="ENG-1"]`)))
}

// views opens the item, the knowledge base and a page, search, and
// Settings › Backups & retention.
func (b *browser) views(pageID string) {
	b.run("open the item", chromedp.Click(css(`a.card[data-key="ENG-1"]`)), chromedp.WaitVisible(css(`table.history`)), b.shot("item"))
	if got := b.text(`main`); !strings.Contains(got, "Ship the dashboard") || !strings.Contains(got, "created") {
		b.t.Errorf("the item view says %q, want its title and its history", got)
	}
	b.run("open the knowledge base", chromedp.Click(css(`#nav-kb`)), chromedp.WaitVisible(css(`a[data-page="`+pageID+`"]`)), b.shot("kb"),
		chromedp.Click(css(`a[data-page="`+pageID+`"]`)), chromedp.WaitVisible(css(`pre.body`)), b.shot("page"))
	if got := b.text(`pre.body`); got != "Restart the node." {
		b.t.Errorf("the page view's body = %q", got)
	}
	b.run("search", chromedp.Click(css(`#nav-search`)), chromedp.WaitVisible(css(`input[name="q"]`)), chromedp.SendKeys(css(`input[name="q"]`), "dashboard"),
		chromedp.Click(css(`main form button`)), chromedp.WaitVisible(css(`a[href="#/item/ENG-1"]`)), b.shot("search"))
	b.run("open Settings › Backups & retention", chromedp.Click(css(`#nav-settings`)), chromedp.WaitVisible(css(`td[data-col="applied_through"]`)),
		chromedp.WaitVisible(css(`td[data-col="sha256"]`)), b.shot("retention"))
	if got := b.text(`main`); !strings.Contains(got, "CREWLET_TRACKER_LOG") || !strings.Contains(got, "CREWLET_PAGES_LOG") {
		b.t.Errorf("the retention view says %q, want a row per log", got)
	}
}

// progress reads the Settings page's progress: the backup taken before
// (done, every page), the node's drain in each domain (caught up, at a
// rate measured between two readings), and a second backup appearing on
// the open page without a reload.
func (b *browser) progress(s *Serve) {
	b.run("see the backup's progress", chromedp.WaitVisible(css(`.backup[data-phase="done"]`)))
	if got := b.text(`.backup`); !strings.Contains(got, "100 %") || !strings.Contains(got, "done") {
		b.t.Errorf("the backup progress says %q, want it done at 100 %%", got)
	}
	// The node publishes its positions at its beat, so right after a
	// write its row may show a lag; with no more writes every domain comes
	// to be caught up, at a rate measured between two readings.
	b.run("see every domain drained, its rate measured", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](`(() => {
			const rows = [...document.querySelectorAll('.drain tr')].slice(1);
			return rows.length >= 2 && rows.every((tr) => tr.querySelector('td[data-col="status"]').textContent === 'caught up' &&
				tr.querySelector('td[data-col="lag_records"]').textContent === '0' &&
				tr.querySelector('td[data-col="rate"]').textContent.endsWith('records/s'));
		})()`)(ctx, tg)
		return err
	}), b.shot("progress"))
	name := takeBackup(b.t, s)
	b.run("see a new backup without a reload", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](`(document.querySelector('.backup') || {}).textContent.includes(`+strconv.Quote(name)+`)`)(ctx, tg)
		return err
	}))
}

// checkDashboardEdge: the page is served without a token but under the
// Host rules, with a policy that keeps scripts to the node's own; the
// data behind it wants the token.
func checkDashboardEdge(t *testing.T, s *Serve) {
	t.Helper()
	get := func(path, host string) *http.Response {
		req, err := http.NewRequest(http.MethodGet, s.BaseURL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := get("/", ""); r.StatusCode != http.StatusOK || !strings.Contains(r.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("GET / = %d with CSP %q, want 200 with script-src 'self'", r.StatusCode, r.Header.Get("Content-Security-Policy"))
	}
	if r := get("/ui/app.js", ""); r.StatusCode != http.StatusOK {
		t.Errorf("GET /ui/app.js = %d", r.StatusCode)
	}
	if r := get("/", "evil.example"); r.StatusCode != http.StatusForbidden {
		t.Errorf("GET / with a foreign Host = %d, want 403", r.StatusCode)
	}
	if r := get("/api/v1/projects", ""); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/projects without the token = %d, want 401", r.StatusCode)
	}
}

// takeBackup takes a snapshot through the node's backup route (what
// crewlet retention backup calls), reading its progress to the end.
func takeBackup(t *testing.T, s *Serve) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.BaseURL+snapshot.BackupPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "sha256") {
		t.Fatalf("backup: %d %s %v", resp.StatusCode, body, err)
	}
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	var last snapshot.BackupLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Snapshot == nil {
		t.Fatalf("backup's last line %q: %v", lines[len(lines)-1], err)
	}
	return last.Snapshot.Name
}
