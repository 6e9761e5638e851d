package peerbench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Rqlite is an rqlite node or cluster over its HTTP API (/db/execute,
// /db/query) at its default durability. With several base URLs, workers
// spread over the nodes from First (NodeOf); a write sent to a follower is
// redirected by rqlite itself, which the client follows.
type Rqlite struct {
	BaseURLs []string
	// First is the index in BaseURLs of the first worker's node.
	First int
	// PIDs are the nodes' processes, where the bench started them.
	PIDs []int
	http *http.Client

	plan Plan
	// run makes this run's operation ids distinct from an earlier run's
	// against the same nodes; ops counts them.
	run string
	ops atomic.Uint64
	// versions is what each update worker last wrote its item at.
	versions [Workers]int64
	// flips counts the bulk updates applied, which says which way the
	// next one goes.
	bulkMu sync.Mutex
	flips  int
}

// Name is "rqlite".
func (r *Rqlite) Name() string { return "rqlite" }

// Supports: every kind but Crewlet's own (the MCP floor and get).
func (r *Rqlite) Supports(k Kind) bool { return k != MCPFloor && k != GetMCP }

// result is one statement's answer.
type result struct {
	Error        string  `json:"error"`
	RowsAffected int64   `json:"rows_affected"`
	Values       [][]any `json:"values"`
}

// Setup creates the tables the plan's kinds need and their rows, and
// waits until every node reads them on its own (level none), as the
// Crewlet target waits for its rows on every node: a follower that has
// not applied them yet would fail the reads sent to it.
func (r *Rqlite) Setup(ctx context.Context, p Plan) error {
	r.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	r.plan = p
	b := make([]byte, 6)
	rand.Read(b)
	r.run = hex.EncodeToString(b)
	if err := r.setupToy(ctx); err != nil {
		return err
	}
	versions, err := fileSameJob(ctx, r, p)
	if err != nil {
		return err
	}
	r.versions = versions
	for i := range r.BaseURLs {
		if err := untilSettled(ctx, func() error { return r.holds(ctx, i, p) }); err != nil {
			return err
		}
	}
	return nil
}

func (r *Rqlite) setupToy(ctx context.Context) error {
	_, err := r.execute(ctx, 0, false, []stmt{
		st("CREATE TABLE IF NOT EXISTS bench (id INTEGER PRIMARY KEY, title TEXT NOT NULL)"),
		st("INSERT OR IGNORE INTO bench(id, title) VALUES(1, ?)", "the row the reads read"),
	})
	return err
}

// txnOf runs stmts as one transactional request (sameJobFiler).
func (r *Rqlite) txnOf(ctx context.Context, stmts []stmt) error {
	_, err := r.execute(ctx, 0, true, stmts)
	return err
}

// holds fails (as passing) until node i's own copy holds the rows the
// reads read.
func (r *Rqlite) holds(ctx context.Context, i int, p Plan) error {
	want := []stmt{st("SELECT count(*) FROM bench WHERE id = 1"), st("SELECT count(*) FROM items WHERE key = ?", fmt.Sprintf("GT-%d", Workers))}
	if p.filesCorpus() {
		want = append(want, st("SELECT count(*) > 0 FROM items WHERE key = ?", fmt.Sprintf("%s-1", corpusProject(p.corpusProjects()-1))))
	}
	res, err := r.query(ctx, i, "none", want)
	if err != nil {
		return &statusError{code: http.StatusServiceUnavailable, msg: err.Error()}
	}
	for k, rs := range res {
		if len(rs.Values) != 1 || fmt.Sprint(rs.Values[0][0]) != "1" {
			return &statusError{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("rqlite node %s does not hold the rows yet (%v)", r.base(i), want[k])}
		}
	}
	return nil
}

// Do runs one operation.
func (r *Rqlite) Do(ctx context.Context, w Workload, worker, i int) error {
	at := time.Now().UnixMilli()
	switch w.Kind {
	case HTTPFloor:
		return r.get(ctx, worker, "/readyz")
	case Create:
		title, desc := corpusText(worker*1_000_003 + i)
		_, err := r.execute(ctx, worker, true, createTxn(r.opID(), "CR", title, desc, assignee(i), at))
		return err
	case Update:
		return r.update(ctx, worker, i, at)
	case Get, Linearizable:
		return r.getItem(ctx, worker, map[Kind]string{Get: "none", Linearizable: "linearizable"}[w.Kind])
	case Search:
		res, err := r.query(ctx, worker, "none", []stmt{searchQuery(searchTerms(worker*1_000_003+i), 10)})
		if err == nil && len(res) != 1 {
			err = fmt.Errorf("search answered %d results", len(res))
		}
		return err
	case Bulk:
		return r.bulk(ctx, worker, at)
	case ToyWrite:
		_, err := r.execute(ctx, worker, false, []stmt{st("INSERT INTO bench(title) VALUES(?)", fmt.Sprintf("w%d-%d", worker, i))})
		return err
	case ToyLinear, ToyStale:
		level := map[Kind]string{ToyLinear: "linearizable", ToyStale: "none"}[w.Kind]
		return r.get(ctx, worker, "/db/query?level="+level+"&q="+url.QueryEscape("SELECT id, title FROM bench WHERE id = 1"))
	}
	return fmt.Errorf("rqlite has no workload %s", w.Kind)
}

func (r *Rqlite) opID() string { return fmt.Sprintf("%s-%d", r.run, r.ops.Add(1)) }

// update retitles the worker's own item under if_match: the version it
// last wrote the item at, which no other worker changes.
func (r *Rqlite) update(ctx context.Context, worker, i int, at int64) error {
	w := worker % Workers
	key := fmt.Sprintf("UP-%d", w+1)
	title, _ := corpusText(worker*1_000_003 + i)
	res, err := r.execute(ctx, worker, true, updateTxn(r.opID(), key, r.versions[w], title, at))
	if err != nil {
		return err
	}
	if res[updateApplied].RowsAffected != 1 {
		return fmt.Errorf("update of %s at version %d: stale", key, r.versions[w])
	}
	r.versions[w]++
	return nil
}

// getItem reads the worker's item with its fields, tags and watchers.
func (r *Rqlite) getItem(ctx context.Context, worker int, level string) error {
	key := fmt.Sprintf("GT-%d", worker%Workers+1)
	res, err := r.query(ctx, worker, level, getQueries(key))
	if err != nil {
		return err
	}
	if len(res) != 3 || len(res[0].Values) != 1 || len(res[1].Values) != 2 || len(res[2].Values) != 2 {
		return fmt.Errorf("get %s: answer has not the item, two tags and two watchers: %+v", key, res)
	}
	return nil
}

// bulk sets every item of the bulk project to the other status, in one
// transaction.
func (r *Rqlite) bulk(ctx context.Context, worker int, at int64) error {
	r.bulkMu.Lock()
	defer r.bulkMu.Unlock()
	from, to := bulkStatuses(r.flips)
	res, err := r.execute(ctx, worker, true, bulkTxn(r.opID(), corpusProject(0), from, to, at))
	if err != nil {
		return err
	}
	if got := res[2].RowsAffected; got != int64(r.plan.BulkItems) {
		return fmt.Errorf("bulk update changed %d items, want %d", got, r.plan.BulkItems)
	}
	r.flips++
	return nil
}

// bulkStatuses is which way bulk update n goes: every item from open to
// in_progress, then back.
func bulkStatuses(n int) (from, to string) {
	if n%2 == 0 {
		return "open", "in_progress"
	}
	return "in_progress", "open"
}

func (r *Rqlite) base(worker int) string {
	return NodeOf(r.BaseURLs, r.First, worker)
}

// execute sends stmts in one request to /db/execute, as one transaction
// when tx.
func (r *Rqlite) execute(ctx context.Context, worker int, tx bool, stmts []stmt) ([]result, error) {
	path := "/db/execute"
	if tx {
		path += "?transaction"
	}
	return r.post(ctx, worker, path, stmts)
}

// query sends stmts in one request to /db/query at level.
func (r *Rqlite) query(ctx context.Context, worker int, level string, stmts []stmt) ([]result, error) {
	return r.post(ctx, worker, "/db/query?level="+level, stmts)
}

// scalar is the first column of the one row q reads on the first node
// (at linearizable: the set-up reads what it has just written), 0 when
// it reads none.
func (r *Rqlite) scalar(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := r.query(ctx, 0, "linearizable", []stmt{st(q, args...)})
	if err != nil || len(res) != 1 || len(res[0].Values) == 0 {
		return 0, err
	}
	v, ok := res[0].Values[0][0].(float64)
	if !ok {
		return 0, fmt.Errorf("%s: %v is not a number", q, res[0].Values[0][0])
	}
	return int64(v), nil
}

func (r *Rqlite) post(ctx context.Context, worker int, path string, stmts []stmt) ([]result, error) {
	body, err := json.Marshal(stmts)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base(worker)+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
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
	_, err = r.do(req)
	return err
}

// do sends req and fails on a status other than 200 or a result that
// names an error.
func (r *Rqlite) do(req *http.Request) ([]result, error) {
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s: %.200s", req.Method, req.URL.Path, resp.Status, body)
	}
	return parseResults(body)
}

// parseResults reads rqlite's answer: its results, or the error it or
// one of its statements names. A body that is not rqlite's JSON (a
// health check's) has no results.
func parseResults(body []byte) ([]result, error) {
	var ans struct {
		Results []result `json:"results"`
		Error   string   `json:"error"`
	}
	if json.Unmarshal(body, &ans) != nil {
		return nil, nil
	}
	if ans.Error != "" {
		return nil, errors.New("rqlite: " + ans.Error)
	}
	for _, res := range ans.Results {
		if res.Error != "" {
			return nil, errors.New("rqlite: " + res.Error)
		}
	}
	return ans.Results, nil
}

// Close releases idle connections.
func (r *Rqlite) Close() {
	if r.http != nil {
		r.http.CloseIdleConnections()
	}
}

// RaftState is the Raft role of the rqlite node at baseURL as its
// /status gives it (store.raft.state: Leader, Follower, Candidate):
// where a run's first worker talks to a follower, every write and
// linearizable read it sends takes one more hop, to the leader.
func RaftState(ctx context.Context, baseURL string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+"/status", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s/status answered %s", baseURL, resp.Status)
	}
	var st struct {
		Store struct {
			Raft struct {
				State string `json:"state"`
			} `json:"raft"`
		} `json:"store"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return "", fmt.Errorf("%s/status: %w", baseURL, err)
	}
	if st.Store.Raft.State == "" {
		return "", fmt.Errorf("%s/status names no store.raft.state", baseURL)
	}
	return st.Store.Raft.State, nil
}

// ProfileRequests ask every rqlite node for its CPU profile, which its
// HTTP API serves (Profiler).
func (r *Rqlite) ProfileRequests(ctx context.Context, seconds int) ([]*http.Request, error) {
	return profileRequests(ctx, r.BaseURLs, seconds, nil)
}
