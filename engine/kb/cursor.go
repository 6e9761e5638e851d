package kb

import (
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/crewlet/crewlet/engine"
)

// A cursor carries three things: which query it pages (a fingerprint of
// the tool and its filters, so a cursor brought to another query is
// refused rather than misread), the position token the first page was
// read at, and where the last page ended (a key of the listing's order,
// or an offset into a ranking). Every later page is read at least at that
// position, never behind it, and continues after the key: a row inserted
// between two pages lands before the key (not shown, nothing shifts) or
// after it (shown once), so no row is skipped or repeated.
type cursorState struct {
	Query string `json:"q"`
	At    string `json:"at"`
	After string `json:"after"`
}

// fingerprint names a query: the tool and its filters.
func fingerprint(parts ...string) string {
	h := fnv.New64a()
	h.Write([]byte(strings.Join(parts, "\x00")))
	return strconv.FormatUint(h.Sum64(), 36)
}

// paging is a listing's cursor decoded: the floor its later pages read at
// and where the previous page ended ("" on the first page).
type paging struct {
	query string
	at    *engine.Position
	after string
}

// openCursor decodes a cursor for query, refusing one that is malformed or
// was returned by another query.
func openCursor(raw, query string) (paging, error) {
	pg := paging{query: query}
	if raw == "" {
		return pg, nil
	}
	var c cursorState
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.After == "" {
		return pg, invalid("cursor %q is not one a previous page returned; start again without it.", raw)
	}
	if c.Query != query {
		return pg, invalid("cursor %q was returned by another query (another tool, space or filter); pass the same filters as the page that returned it, or start again without a cursor.", raw)
	}
	p, err := engine.ParsePosition(c.At)
	if err != nil || p.Stream != engine.StreamPages {
		return pg, invalid("cursor %q does not carry a position of the pages log; start again without it.", raw)
	}
	pg.at, pg.after = &p, c.After
	return pg, nil
}

// floor raises r's MinPosition to the first page's position: a later
// page never reads rows older than the first one did.
func (pg paging) floor(r engine.ReadOptions) engine.ReadOptions {
	r = linearizable(r)
	if pg.at != nil && (r.MinPosition == nil || r.MinPosition.Seq < pg.at.Seq) {
		r.MinPosition = pg.at
	}
	return r
}

// next is the cursor of the page after one that ended at after, read at
// info (the first page's position is carried on).
func (pg paging) next(info engine.ReadInfo, after string) string {
	at := info.SeenThrough.Token()
	if pg.at != nil {
		at = pg.at.Token()
	}
	b, _ := json.Marshal(cursorState{Query: pg.query, At: at, After: after})
	return base64.RawURLEncoding.EncodeToString(b)
}

// afterInt is the previous page's end as a number (0 on the first page).
func (pg paging) afterInt() (int64, error) {
	if pg.after == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(pg.after, 10, 64)
	if err != nil || n < 0 {
		return 0, invalid("the cursor's end %q is not a number; start again without the cursor.", pg.after)
	}
	return n, nil
}

// checkLimit fills the default page size and refuses one out of range.
func checkLimit(limit *int, def, max int) error {
	if *limit == 0 {
		*limit = def
	}
	if *limit < 0 || *limit > max {
		return invalid("limit %d is out of range; give 1 to %d.", *limit, max)
	}
	return nil
}
