// Package edgetest holds the raw-HTTP helpers the edge's tests share: a
// request head written by hand (so a declared body can be withheld), the
// answer read off the socket, and a body of unknown length. Tests only.
package edgetest

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Head is a request line and headers, nothing more.
func Head(method, path, host string, header ...string) string {
	return method + " " + path + " HTTP/1.1\r\nHost: " + host + "\r\n" + strings.Join(header, "\r\n") + "\r\n\r\n"
}

// RawAnswer sends head on a new connection to addr, withholding any body
// it declares, and reads the answer within wait: its response (body
// read) and its body as JSON where it is.
func RawAnswer(t testing.TB, addr, head string, wait time.Duration) (*http.Response, map[string]any) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to %q while its body was withheld: %v", strings.SplitN(head, "\r\n", 2)[0], err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	return resp, body
}

// Zeros is a body of N bytes of unknown length (so sent chunked).
type Zeros struct{ N int64 }

func (z *Zeros) Read(p []byte) (int, error) {
	if z.N <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.N)
	clear(p[:k])
	z.N -= k
	return int(k), nil
}
