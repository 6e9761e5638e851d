package engine

import (
	"errors"
	"testing"
)

func TestCheckListen(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:7420", "0.0.0.0:0", ":6222", "[::1]:443", "localhost:65535"} {
		if err := CheckListen("http.listen", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"localhost", "7420", "localhost:99999", "h:-1", "h:port", ""} {
		err := CheckListen("http.listen", bad)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != "http.listen" || ce.Value != bad {
			t.Errorf("%q: %v, want a ConfigError on http.listen", bad, err)
		}
	}
}

func TestConfigErrorText(t *testing.T) {
	if got := (&ConfigError{Field: "operator.token", Reason: "must not contain whitespace"}).Error(); got != "config: operator.token: must not contain whitespace" {
		t.Errorf("without a value: %q", got)
	}
	if got := (&ConfigError{Field: "stream.sync", Value: "sometimes", Reason: "is neither always nor a positive Go duration such as 30s"}).Error(); got != `config: stream.sync: "sometimes" is neither always nor a positive Go duration such as 30s` {
		t.Errorf("with a value: %q", got)
	}
}
