package duty_test

import (
	"bytes"
	"context"
	"log/slog"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/duty"
)

// TestDutyRunsUnderItsProfileLabel: a duty's function runs with the
// pprof label duty=<name>, on its context and on the goroutine itself, so
// a CPU profile of the node (crewlet serve --pprof) tells its CPU apart.
func TestDutyRunsUnderItsProfileLabel(t *testing.T) {
	d := open(t, startBroker(t), "n1", nil)
	seen := make(chan string, 1)
	dump := make(chan string, 1)
	if err := d.Start(duty.Job{Name: "labelled", Run: func(ctx context.Context, _ *slog.Logger) error {
		label, _ := pprof.Label(ctx, "duty")
		var b bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		select {
		case seen <- label:
			dump <- b.String()
		default:
		}
		<-ctx.Done()
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	select {
	case label := <-seen:
		if label != "labelled" {
			t.Errorf("the duty's context has duty=%q", label)
		}
		if g := <-dump; !strings.Contains(g, `"duty":"labelled"`) {
			t.Errorf("no goroutine is labelled duty=labelled:\n%.2000s", g)
		}
	case <-time.After(5 * ttl):
		t.Fatal("the duty did not run within five TTLs")
	}
}
