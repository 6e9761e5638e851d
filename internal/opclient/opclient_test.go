package opclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
)

const testToken = "opclient-test-token"

// answer is a retention answer with every kind of field set: instants
// in two zones, a lag with and without seconds, a generation left.
func answer() fleet.Answer {
	secs := 1.25
	at := time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.UTC)
	return fleet.Answer{Level: engine.ConsistentPrefix, Note: "the log's end could not be read", AskedAt: at, Node: "n1",
		Logs: []fleet.LogFigures{{Domain: engine.DomainTracker, Stream: "CREWLET_TRACKER_LOG", Generation: 2, FirstSeq: 3, LastSeq: 40,
			CreatedAt: at.In(time.FixedZone("", 2*3600)), Measured: true}},
		Nodes: []fleet.NodeFigures{
			{Node: "n1", Domains: []fleet.DomainFigures{{Position: fleet.Position{Node: "n1", Domain: engine.DomainTracker, Stream: "CREWLET_TRACKER_LOG",
				Generation: 2, Seq: 40, AppliedThrough: 38, StreamCreatedAt: at, CheckpointStoredAt: at, StartedAt: at, BeatAt: at},
				Lag: &engine.Lag{Seq: 2, Seconds: &secs}}}},
			{Node: "n2", Domains: []fleet.DomainFigures{{Position: fleet.Position{Node: "n2", Domain: engine.DomainTracker, Generation: 1, Seq: 90}, LeftGen: 1}}},
			{Node: "n3", Domains: []fleet.DomainFigures{{Position: fleet.Position{Node: "n3", Domain: engine.DomainPages}, Lag: &engine.Lag{Seq: 7}}}},
		}}
}

// serve answers RetentionPath as fleet.RetentionHandler does: the JSON
// encoder's bytes, behind a bearer check.
func serve(t *testing.T, status int, body any) (*httptest.Server, *bytes.Buffer) {
	t.Helper()
	var sent bytes.Buffer
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != RetentionPath || r.Method != http.MethodGet {
			t.Errorf("request %s %s", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+testToken {
			t.Errorf("Authorization = %q", got)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if s, ok := body.(string); ok {
			_, _ = w.Write([]byte(s))
			return
		}
		sent.Reset()
		_ = json.NewEncoder(&sent).Encode(body)
		_, _ = w.Write(sent.Bytes())
	}))
	t.Cleanup(ts.Close)
	return ts, &sent
}

// TestRetention: the answer decodes into the type the node encoded, and
// losslessly: encoded again it is the node's bytes (crewlet retention
// status --json prints it so).
func TestRetention(t *testing.T) {
	ts, sent := serve(t, http.StatusOK, answer())
	got, err := New(ts.URL+"/", testToken).Retention(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := json.NewEncoder(&again).Encode(got); err != nil {
		t.Fatal(err)
	}
	if again.String() != sent.String() {
		t.Fatalf("decoded and encoded again:\n%s\nthe node sent:\n%s", again.String(), sent.String())
	}
	if got.Nodes[0].Domains[0].AppliedThrough != 38 || *got.Nodes[0].Domains[0].Lag.Seconds != 1.25 {
		t.Fatalf("figures: %+v", got.Nodes[0].Domains[0])
	}
}

// TestRetentionRefused: a refusal body is an *engine.Refusal with its
// code's fields; anything else not 200 a *StatusError.
func TestRetentionRefused(t *testing.T) {
	ref := engine.Refuse(engine.CodeBrokerUnreachable, "the broker does not answer.").With("node", "n1")
	ts, _ := serve(t, engine.HTTPStatus(ref.Code), ref.Object())
	_, err := New(ts.URL, testToken).Retention(context.Background())
	got, ok := engine.AsRefusal(err)
	if !ok || got.Code != engine.CodeBrokerUnreachable || got.Message != ref.Message || got.RetryAfter != ref.RetryAfter || got.Fields["node"] != "n1" {
		t.Fatalf("err = %#v, want the refusal %#v", err, ref)
	}

	ts, _ = serve(t, http.StatusBadGateway, "upstream gone\n")
	_, err = New(ts.URL, testToken).Retention(context.Background())
	var se *StatusError
	if !errors.As(err, &se) || se.Status != "502 Bad Gateway" || se.Body != "upstream gone" {
		t.Fatalf("err = %v, want a StatusError", err)
	}
	if err.Error() != "502 Bad Gateway: upstream gone" {
		t.Fatalf("StatusError text %q", err)
	}
}

func TestRetentionNotAnAnswer(t *testing.T) {
	ts, _ := serve(t, http.StatusOK, "<html>hello</html>")
	_, err := New(ts.URL, testToken).Retention(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not a retention answer") {
		t.Fatalf("err = %v", err)
	}
}

func TestBadBaseURL(t *testing.T) {
	_, err := New("127.0.0.1:7420", testToken).Retention(context.Background())
	var ue *URLError
	if !errors.As(err, &ue) || ue.URL != "127.0.0.1:7420" {
		t.Fatalf("err = %v, want a URLError", err)
	}
}
