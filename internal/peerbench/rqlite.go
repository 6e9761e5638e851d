package peerbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Rqlite is an rqlite node or cluster over its HTTP API (/db/execute,
// /db/query) at its default durability. With several base URLs, workers
// spread over the nodes; a write sent to a follower is redirected by
// rqlite itself, which the client follows.
type Rqlite struct {
	BaseURLs []string
	// PIDs are the nodes' processes, where the bench started them.
	PIDs []int
	http *http.Client
}

// Name is "rqlite".
func (r *Rqlite) Name() string { return "rqlite" }

// Setup creates the table and its first row, and waits until every node
// reads the row on its own (level none), as the Crewlet target waits for
// it on every node: a follower that has not applied it yet would fail the
// stale reads sent to it.
func (r *Rqlite) Setup(ctx context.Context) error {
	r.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	if err := r.execute(ctx, 0, []any{"CREATE TABLE IF NOT EXISTS bench (id INTEGER PRIMARY KEY, title TEXT NOT NULL)"}); err != nil {
		return err
	}
	if err := r.execute(ctx, 0, []any{[]any{"INSERT OR IGNORE INTO bench(id, title) VALUES(1, ?)", "the row the reads read"}}); err != nil {
		return err
	}
	for i := range r.BaseURLs {
		if err := untilSettled(ctx, func() error { return r.holdsRow(ctx, i) }); err != nil {
			return err
		}
	}
	return nil
}

// holdsRow fails (as passing) until node i's own copy holds row 1.
func (r *Rqlite) holdsRow(ctx context.Context, i int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base(i)+"/db/query?level=none&q="+url.QueryEscape("SELECT count(*) FROM bench WHERE id = 1"), nil)
	if err != nil {
		return err
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var ans struct {
		Results []struct {
			Values [][]int `json:"values"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || len(ans.Results) != 1 || len(ans.Results[0].Values) != 1 || ans.Results[0].Values[0][0] != 1 {
		return fmt.Errorf("rqlite node %s does not hold the row yet (%s)", r.base(i), resp.Status)
	}
	return nil
}

// Do runs one operation.
func (r *Rqlite) Do(ctx context.Context, w Workload, worker, i int) error {
	switch w.Kind {
	case Floor:
		return r.get(ctx, worker, "/readyz")
	case Write:
		return r.execute(ctx, worker, []any{[]any{"INSERT INTO bench(title) VALUES(?)", fmt.Sprintf("w%d-%d", worker, i)}})
	case Linearizable, Stale:
		level := map[Kind]string{Linearizable: "linearizable", Stale: "none"}[w.Kind]
		return r.get(ctx, worker, "/db/query?level="+level+"&q="+url.QueryEscape("SELECT id, title FROM bench WHERE id = 1"))
	}
	return fmt.Errorf("rqlite has no workload %s", w.Kind)
}

func (r *Rqlite) base(worker int) string {
	return strings.TrimSuffix(r.BaseURLs[worker%len(r.BaseURLs)], "/")
}

func (r *Rqlite) execute(ctx context.Context, worker int, stmts []any) error {
	body, _ := json.Marshal(stmts)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base(worker)+"/db/execute", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	// A redirect to the leader must resend the body: GetBody does.
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return r.do(req)
}

func (r *Rqlite) get(ctx context.Context, worker int, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base(worker)+path, nil)
	if err != nil {
		return err
	}
	return r.do(req)
}

// do sends req and fails on a status other than 200 or a result that
// names an error.
func (r *Rqlite) do(req *http.Request) error {
	resp, err := r.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %.200s", req.Method, req.URL.Path, resp.Status, body)
	}
	var ans struct {
		Results []struct {
			Error string `json:"error"`
		} `json:"results"`
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &ans) == nil {
		if ans.Error != "" {
			return fmt.Errorf("rqlite: %s", ans.Error)
		}
		for _, res := range ans.Results {
			if res.Error != "" {
				return fmt.Errorf("rqlite: %s", res.Error)
			}
		}
	}
	return nil
}

// Close releases idle connections.
func (r *Rqlite) Close() {
	if r.http != nil {
		r.http.CloseIdleConnections()
	}
}
