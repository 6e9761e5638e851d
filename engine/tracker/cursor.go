package tracker

// Page cursors of list_work_items and search_work_items. A cursor carries
// the position the first page was read at, the digest of the query it
// pages (filters and sort, not the page size) and where the page ended on
// the sort key. The next page is read at least at that position (a floor,
// never behind it) and starts strictly after where the last one ended
// (keyset), so a row inserted elsewhere neither shifts nor repeats the
// rows already answered; a cursor of another query is refused.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/crewlet/crewlet/engine"
)

// pageCursor is a cursor's content.
type pageCursor struct {
	V int    `json:"v"`
	Q string `json:"q"`           // the query's digest
	P string `json:"p,omitempty"` // the first page's position token
	S string `json:"s,omitempty"` // the last row's sort value
	K string `json:"k"`           // the last row's key (search: its doc)
}

// queryDigest names a query by its parts, so a cursor of another is told.
func queryDigest(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:8])
}

func (c pageCursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor of the query named digest; "" is the first
// page (a zero cursor).
func decodeCursor(cursor, digest string) (pageCursor, error) {
	var c pageCursor
	if cursor == "" {
		return c, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || json.Unmarshal(raw, &c) != nil || c.V != 1 || c.K == "" {
		return c, invalid("cursor %q is not one a previous page returned; start again without it.", cursor)
	}
	if c.Q != digest {
		return c, invalid("that cursor pages another query (other filters or sort); pass it with the same arguments as the page that returned it, or start again without it.")
	}
	return c, nil
}

// floor raises r's floor to the cursor's first-page position, never
// lowering one the caller brought.
func (c pageCursor) floor(r engine.ReadOptions) (engine.ReadOptions, error) {
	if c.P == "" {
		return r, nil
	}
	p, err := engine.ParsePosition(c.P)
	if err != nil {
		return r, invalid("the cursor's position is not one a page returned; start again without it.")
	}
	if m := r.MinPosition; m == nil || (m.Stream == p.Stream && m.Generation == p.Generation && m.Seq < p.Seq) {
		r.MinPosition = &p
	}
	return r, nil
}

// firstPosition is the position a next cursor carries: the first page's.
func (c pageCursor) firstPosition(info engine.ReadInfo) string {
	if c.P != "" {
		return c.P
	}
	if info.SeenThrough.IsZero() {
		return ""
	}
	return info.SeenThrough.Token()
}
