//go:build integration

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestChildAdoptKilled: n3 (a `crewlet serve` child) is stopped, the
// others write, and the tracker log's start is purged by the broker; n3
// started again finds itself below the floor and is SIGKILLed while it
// adopts. Started once more, it adopts (statelog_adopted, the donor's
// statelog_snapshot_sent with the same sha256) and holds every item once.
func TestChildAdoptKilled(t *testing.T) {
	f := startChildFleet(t)
	c1 := f.serves[0].HTTPClient(t)
	callRetry(t, c1, "create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	write := func(count int) {
		for i := 0; i < count; i++ {
			callRetry(t, c1, "create_work_item", map[string]any{"project": "ENG", "title": fmt.Sprintf("item %d", i)})
		}
	}
	write(5)
	f.serves[2].Stop(t)
	write(10)
	purgeTrackerLog(t, f.clientURLs[0])

	killWhileAdopting(t, f)
	f.restart(t, 2)
	if !strings.Contains(f.serves[2].Stderr.String(), `"msg":"statelog_adopted"`) {
		t.Fatalf("n3 restarted without adopting:\n%s", f.serves[2].Stderr)
	}
	write(1)
	list := callRetry(t, f.serves[2].HTTPClient(t), "list_work_items", map[string]any{"project": "ENG", "limit": 100})
	if items, _ := list["items"].([]any); len(items) != 16 {
		t.Fatalf("n3 lists %d items after adopting, want 16: %v", len(items), list)
	}
}

// purgeTrackerLog removes the tracker log's start with the broker's purge
// (through a broker's client port), keeping its last record.
func purgeTrackerLog(t *testing.T, url string) {
	t.Helper()
	nc, err := nats.Connect(url, nats.Token(childFleetToken))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, err := js.Stream(ctx, "CREWLET_TRACKER_LOG")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSequence(info.State.LastSeq)); err != nil {
		t.Fatal(err)
	}
}

// killWhileAdopting starts n3 and SIGKILLs it once it says it is below
// the floor, which it says before it asks the fleet for a snapshot.
func killWhileAdopting(t *testing.T, f *childFleet) {
	t.Helper()
	cmd := exec.Command(f.bin, "serve", "--data", f.dirs[2], "--http", "127.0.0.1:0", "--log-format", "json", "--config", f.configs[2])
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	below := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), `"msg":"statelog_below_the_floor"`) {
				said = true
				close(below)
			}
		}
	}()
	select {
	case <-below:
		_ = cmd.Process.Kill()
		<-done
	case err := <-done:
		t.Fatalf("n3 exited before it said it is below the floor: %v", err)
	case <-time.After(bootTimeout):
		_ = cmd.Process.Kill()
		t.Fatalf("n3 did not say it is below the floor within %v", bootTimeout)
	}
}
