package engine

import "testing"

func TestParsePosition(t *testing.T) {
	good := map[string]Position{
		"CREWLET_TRACKER_LOG@1:42": {StreamTracker, 1, 42},
		"CREWLET_PAGES_LOG@3:0":    {StreamPages, 3, 0},
	}
	for tok, want := range good {
		got, err := ParsePosition(tok)
		if err != nil || got != want || got.Token() != tok {
			t.Errorf("%q: %+v %v", tok, got, err)
		}
	}
	for _, bad := range []string{"", "@1:2", "X@0:1", "X@1:", "X@1:-1", "X@01:2", "X@1:02", "x@1:2", "X@1:2 ", " X@1:2", "X1:2", "X@1", "X@1:2:3", "X@+1:2"} {
		if _, err := ParsePosition(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParsePosition(f *testing.F) {
	f.Add("CREWLET_TRACKER_LOG@1:42")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePosition(s)
		if err == nil && p.Token() != s {
			t.Fatalf("%q parsed to %+v which renders %q", s, p, p.Token())
		}
	})
}

func TestCodeTableIsComplete(t *testing.T) {
	for _, c := range []Code{CodeBehind, CodeTooStale, CodeStalled, CodeNoQuorum, CodeBrokerUnreachable, CodeLogFull, CodeDeferred,
		CodeDeferredScopeUnknown, CodeBelowFloor, CodeFloorUnknown, CodeEvicted, CodeMaintenance, CodeWrongStream} {
		info, ok := Codes[c]
		if !ok || info.Doc == "" || info.HTTPStatus == 0 {
			t.Errorf("code %s has no full row", c)
		}
	}
	retryable := 0
	for _, c := range []Code{CodeBehind, CodeNoQuorum, CodeBrokerUnreachable, CodeStalled} {
		if Codes[c].Retryable {
			retryable++
		}
	}
	if retryable != 4 || Codes[CodeDeferred].Retryable || Codes[CodeNoQuorum].RetryAfter != 4 {
		t.Error("the four codes worth coming back for are not the retryable ones")
	}
}
