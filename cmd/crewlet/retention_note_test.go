//go:build integration

package main

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/crewlet/crewlet/engine/fleettest"
)

// unmeasured is what the retention answer's note says when the node
// cannot read its logs' ends from its broker (engine/fleet/status.go).
const unmeasured = "no lag is measured"

// TestRetentionNoteWhenBrokerCut: a node on a NATS server it reaches
// through a TCP proxy, the proxy cut, cannot read its logs' ends: crewlet
// retention status and Settings › Backups & retention say so in a
// sentence, rather than printing lags it cannot measure.
func TestRetentionNoteWhenBrokerCut(t *testing.T) {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	proxy, err := fleettest.NewProxy(ns.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	cfg := writeConfig(t, "node: {name: solo}\nstream: {type: nats, urls: [nats://"+proxy.Addr()+"]}\n")
	s := StartServe(t, t.TempDir(), "--config", cfg)
	// Its stop waits on the broker: healed first, it stops as it should.
	defer func() {
		proxy.Heal()
		s.Stop(t)
	}()
	Call(t, s.HTTPClient(t), "create_project", map[string]any{"key": "ENG", "name": "Engineering"})

	// Connected, the node has beaten and read the register: its answer
	// measures, and it has the positions to fall back on once cut off.
	out := waitRetentionStatus(t, s, "the node's beat, measured", func(out string) bool {
		return strings.Contains(out, "\nsolo ") && !strings.Contains(out, "not yet") && !strings.Contains(out, unmeasured)
	})
	if !strings.Contains(out, "level: stale") {
		t.Fatalf("connected, retention status says:\n%s", out)
	}
	b := newBrowser(t)
	b.run("log in and open Settings › Backups & retention",
		chromedp.Navigate(s.BaseURL+"/"),
		chromedp.WaitVisible(css(`#token`)),
		chromedp.SendKeys(css(`#token`), s.Token),
		chromedp.Click(css(`#login button`)),
		chromedp.WaitVisible(css(`#nav-settings`)),
		chromedp.Click(css(`#nav-settings`)),
		chromedp.WaitVisible(css(`td[data-col="applied_through"]`)),
	)
	if got := b.text(`main`); strings.Contains(got, unmeasured) {
		t.Fatalf("connected, the page already says %q:\n%s", unmeasured, got)
	}

	proxy.Cut()
	out = waitRetentionStatus(t, s, "the sentence, cut off", func(out string) bool { return strings.Contains(out, unmeasured) })
	t.Logf("cut off, retention status says:\n%s", out)
	if !strings.Contains(out, "level: consistent_prefix") {
		t.Errorf("cut off, retention status is not weakened to consistent_prefix:\n%s", out)
	}
	// The open page reads the answer again every two seconds and redraws
	// the view, whose other reads (the snapshots) wait out the broker's
	// bounds too: a longer wait than one call's.
	ctx, cancel := context.WithTimeout(b.ctx, 3*callTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('main').innerText.includes(`+strconv.Quote(unmeasured)+`)`, chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatalf("the page never said %q: %v\n%s", unmeasured, err, b.text(`main`))
	}
	b.run("screenshot", b.shot("retention-cut"))
	got := b.text(`main`)
	if !strings.Contains(got, "level: consistent_prefix") {
		t.Errorf("cut off, the page does not name consistent_prefix:\n%s", got)
	}
	if note := b.text(`main p.muted`); !strings.Contains(note, "cannot read the end of the") {
		t.Errorf("the page's first muted paragraph is %q, want the note", note)
	}
}

// waitRetentionStatus runs crewlet retention status against s until its
// text satisfies ok, tolerating refusals meanwhile, and returns it.
func waitRetentionStatus(t *testing.T, s *Serve, what string, ok func(string) bool) string {
	t.Helper()
	bin := BuildBinary(t)
	deadline := time.Now().Add(callTimeout)
	for {
		out, err := exec.Command(bin, "retention", "status", "--node", s.BaseURL, "--token-file", s.TokenFile).CombinedOutput()
		if err == nil && ok(string(out)) {
			return string(out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention status never showed %s: %v\n%s", what, err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
