package fleettest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Converged reports nil once every running node has applied the tracker
// log to its end and every table hashes identically on every node.
func Converged(ctx context.Context, c *Cluster) error {
	var first map[string]string
	firstName := ""
	for i := 0; i < c.Size(); i++ {
		n := c.Node(i)
		if n == nil {
			return fmt.Errorf("n%d is stopped", i+1)
		}
		info, err := n.Log(engine.DomainTracker).Info(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name(), err)
		}
		if a := n.Replica(engine.DomainTracker).Applied(); a < info.LastSeq {
			return fmt.Errorf("%s applied %d of %d", n.Name(), a, info.LastSeq)
		}
		h, err := TableHashes(ctx, n.DB())
		if err != nil {
			return err
		}
		if first == nil {
			first, firstName = h, n.Name()
			continue
		}
		if d := diff(first, h); d != "" {
			return fmt.Errorf("%s and %s differ: %s", firstName, n.Name(), d)
		}
	}
	return nil
}

func diff(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s %s≠%s", k, v, b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k+" only on the second")
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprint(out)
}

// ReadLog reads every message of a log from its first sequence to its last.
func ReadLog(ctx context.Context, l statelog.Log) ([]statelog.StoredMsg, error) {
	var info statelog.LogInfo
	err := retryUnavailable(ctx, func() (err error) { info, err = l.Info(ctx); return err })
	if err != nil {
		return nil, err
	}
	var out []statelog.StoredMsg
	for s := max(info.FirstSeq, 1); s <= info.LastSeq; s++ {
		var m statelog.StoredMsg
		err := retryUnavailable(ctx, func() (err error) { m, err = l.Get(ctx, s); return err })
		if errors.Is(err, statelog.ErrNoMessage) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// retryUnavailable retries f for up to 30 s while JetStream answers that
// it is temporarily unavailable, as it does for a few seconds after a
// heal while its groups elect leaders.
func retryUnavailable(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil || !strings.Contains(err.Error(), "temporarily unavailable") || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
