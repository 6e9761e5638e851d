// Package opclient is the operator's typed Go client of a node's HTTP
// API under /api/v1/: it presents the operator's bearer token, decodes an answer
// into the engine's own type (the same one the node encoded), and a
// refusal body into *engine.Refusal. A command that talks to a running
// node (`crewlet retention status`) uses it rather than hand-written
// requests, so the route, the header and the refusal's shape are written
// once.
package opclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/capacity"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/snapshot"
	"github.com/crewlet/crewlet/engine/statelog"
)

// RetentionPath is the retention answer's route.
const RetentionPath = "/api/v1/retention"

const (
	// DefaultTimeout bounds one call, its answer read included: a node
	// answers a replication question from what it holds, so a call that
	// takes longer is not coming back.
	DefaultTimeout = 15 * time.Second
	// MaxAnswerBytes bounds how much of an answer is read; a retention
	// answer of a large fleet is a small fraction of it.
	MaxAnswerBytes = 8 << 20
)

// Client calls one node's /api/v1/ routes with its operator token.
type Client struct {
	base  string
	token string
	// HTTP sends the requests (nil: http.DefaultClient).
	HTTP *http.Client
	// Timeout bounds one call (0: DefaultTimeout).
	Timeout time.Duration
}

// New returns a client of the node at baseURL (http://127.0.0.1:7420; a
// trailing slash is dropped) presenting token.
func New(baseURL, token string) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token}
}

// Retention is GET /api/v1/retention: every data node's positions per
// domain beside each log's end. A refusal is an *engine.Refusal; another
// answer that is not 200 is a *StatusError.
func (c *Client) Retention(ctx context.Context) (fleet.Answer, error) {
	var a fleet.Answer
	body, err := c.get(ctx, RetentionPath)
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return a, fmt.Errorf("the node answered something that is not a retention answer: %w", err)
	}
	return a, nil
}

// SetCapacity is POST /api/v1/logs/{log}/capacity?max_bytes=N (crewlet
// retention set-capacity): the log's ceiling changed to maxBytes, for the
// whole fleet. A refusal is an *engine.Refusal.
func (c *Client) SetCapacity(ctx context.Context, log string, maxBytes int64) (capacity.Change, error) {
	var ch capacity.Change
	body, err := c.do(ctx, http.MethodPost, capacity.Path(log)+"?max_bytes="+strconv.FormatInt(maxBytes, 10))
	if err != nil {
		return ch, err
	}
	if err := json.Unmarshal(body, &ch); err != nil {
		return ch, fmt.Errorf("the node answered something that is not a capacity change: %w", err)
	}
	return ch, nil
}

// Reanchor asks the node to re-anchor one state log (crewlet retention
// reanchor): kase is recreated, restored or abandoned; discard voids what
// was written to a restored log after the restore; opID, when given, is
// the retry of an earlier reanchor's generation record.
func (c *Client) Reanchor(ctx context.Context, log, kase string, discard bool, opID string) (statelog.Reanchored, error) {
	var out statelog.Reanchored
	q := url.Values{"case": {kase}}
	if discard {
		q.Set("discard", "true")
	}
	if opID != "" {
		q.Set("op_id", opID)
	}
	body, err := c.do(ctx, http.MethodPost, "/api/v1/logs/"+url.PathEscape(log)+"/reanchor?"+q.Encode())
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return out, fmt.Errorf("the node answered something that is not a reanchor: %w", err)
	}
	return out, nil
}

// get sends GET path and returns the body of a 200 answer.
func (c *Client) get(ctx context.Context, path string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, path)
}

// do sends method path and returns the body of a 200 answer, within the
// client's timeout.
func (c *Client) do(ctx context.Context, method, path string) ([]byte, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := c.send(ctx, method, path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes))
}

// send sends method path with the token and returns a 200 answer's
// response, its body unread; any other answer is read and returned as
// its error (a refusal, or the status and body).
func (c *Client) send(ctx context.Context, method, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return nil, &URLError{URL: c.base, Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes))
	if ref := refusal(body); ref != nil {
		return nil, ref
	}
	return nil, &StatusError{Status: resp.Status, Body: strings.TrimSpace(string(body))}
}

// refusal decodes a refusal body, {"refused": code, "message": …} and
// its code's own fields, nil when body is not one. The guard's and the
// edge's refusals (unauthorized, forbidden, too_large) have this shape
// too, so they decode the same way.
func refusal(body []byte) *engine.Refusal {
	var ref engine.Refusal
	if json.Unmarshal(body, &ref) != nil || ref.Code == "" {
		return nil
	}
	var all map[string]any
	if json.Unmarshal(body, &all) == nil {
		for _, known := range []string{"refused", "message", "retry_after_seconds", "position"} {
			delete(all, known)
		}
		for k, v := range all {
			ref.With(k, v)
		}
	}
	return &ref
}

// StatusError is an answer that is neither 200 nor a refusal: what sits
// in front of the node (a proxy, another server on the port) answered.
type StatusError struct {
	Status string // "502 Bad Gateway"
	Body   string // trimmed
}

func (e *StatusError) Error() string { return e.Status + ": " + e.Body }

// URLError is a base URL no request can be made to: the caller's
// mistake, not the node's answer.
type URLError struct {
	URL string
	Err error
}

func (e *URLError) Error() string { return fmt.Sprintf("%q: %v", e.URL, e.Err) }

func (e *URLError) Unwrap() error { return e.Err }

// Backup is POST snapshot.BackupPath: the node takes a snapshot into its
// repository. progress (when set) is told each progress line the node
// streams while the copy runs; the answer is the snapshot's manifest, or
// the node's refusal as an *engine.Refusal. It is not bounded by Timeout,
// only by ctx: a large database takes what it takes, and the node reports
// progress at least every second of the copy.
func (c *Client) Backup(ctx context.Context, progress func(snapshot.ProgressLine)) (snapshot.Manifest, error) {
	resp, err := c.post(ctx, snapshot.BackupPath)
	if err != nil {
		return snapshot.Manifest{}, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(io.LimitReader(resp.Body, MaxAnswerBytes))
	for {
		var l snapshot.BackupLine
		if err := dec.Decode(&l); err != nil {
			return snapshot.Manifest{}, fmt.Errorf("the node's backup answer ended before a snapshot or a refusal: %w", err)
		}
		switch {
		case l.Error != nil:
			if ref := refusal(l.Error); ref != nil {
				return snapshot.Manifest{}, ref
			}
			return snapshot.Manifest{}, fmt.Errorf("the node's backup failed: %s", l.Error)
		case l.Snapshot != nil:
			return *l.Snapshot, nil
		case l.Progress != nil && progress != nil:
			progress(*l.Progress)
		}
	}
}

// VerifyRestore is POST snapshot.VerifyRestorePath: the node restores the
// newest snapshot into a scratch database and compares it with its live
// copy at the same checkpoint. Bounded by ctx only, like Backup.
func (c *Client) VerifyRestore(ctx context.Context) (snapshot.Report, error) {
	var r snapshot.Report
	resp, err := c.post(ctx, snapshot.VerifyRestorePath)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("the node answered something that is not a verify-restore report: %w", err)
	}
	return r, nil
}

// post sends POST path and returns a 200 answer's response, its body
// unread (a long operation streams its progress there); any other answer
// is read and returned as its error.
func (c *Client) post(ctx context.Context, path string) (*http.Response, error) {
	return c.send(ctx, http.MethodPost, path)
}
