package peerbench

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// sameJobDB is a SQLite file with the same-job schema, run the way rqlite
// runs a request: every statement of a transactional request in one
// transaction, rolled back whole when one fails.
type sameJobDB struct {
	t  testing.TB
	db *sql.DB
}

func openSameJob(t testing.TB) *sameJobDB {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "samejob.db"), 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	d := &sameJobDB{t: t, db: db}
	var schema []stmt
	for _, s := range sameJobSchema {
		schema = append(schema, st(s))
	}
	if _, err := d.txn(append(schema, newProject("CR", "Creates")...)); err != nil {
		t.Fatal(err)
	}
	return d
}

// txn runs stmts in one transaction and returns each one's rows affected.
func (d *sameJobDB) txn(stmts []stmt) ([]int64, error) {
	tx, err := d.db.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var out []int64
	for _, s := range stmts {
		res, err := tx.Exec(s.sqlOf(), s.argsOf()...)
		if err != nil {
			return nil, fmt.Errorf("%.60s: %w", s.sqlOf(), err)
		}
		n, _ := res.RowsAffected()
		out = append(out, n)
	}
	return out, tx.Commit()
}

// rows reads one statement's rows as strings.
func (d *sameJobDB) rows(s stmt) [][]string {
	d.t.Helper()
	rs, err := d.db.Query(s.sqlOf(), s.argsOf()...)
	if err != nil {
		d.t.Fatal(err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var out [][]string
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			d.t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = fmt.Sprint(v)
		}
		out = append(out, row)
	}
	return out
}

func (d *sameJobDB) one(q string, args ...any) string {
	d.t.Helper()
	rs := d.rows(st(q, args...))
	if len(rs) != 1 {
		d.t.Fatalf("%s: %d rows", q, len(rs))
	}
	return rs[0][0]
}

// TestCreateTxn: a create numbers its item from the project's counter,
// keys it, files its history and search rows; its operation id makes a
// retry fail whole, leaving no second item and the counter where it was.
func TestCreateTxn(t *testing.T) {
	d := openSameJob(t)
	for i, op := range []string{"op-1", "op-2"} {
		if _, err := d.txn(createTxn(op, "CR", fmt.Sprintf("fix the lantern %d", i), "the wick is short", "ann", 100)); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.one(`SELECT last_number FROM projects WHERE key = 'CR'`); got != "2" {
		t.Fatalf("counter %s, want 2", got)
	}
	if got := d.rows(st(`SELECT key, number, status, assignee, version FROM items ORDER BY number`)); fmt.Sprint(got) != "[[CR-1 1 open ann 1] [CR-2 2 open ann 1]]" {
		t.Fatalf("items %v", got)
	}
	if got := d.one(`SELECT count(*) FROM history h JOIN items i ON i.id = h.item WHERE i.key = 'CR-2' AND h.field = 'created'`); got != "1" {
		t.Fatalf("history rows of CR-2: %s", got)
	}
	if got := d.rows(searchQuery("lantern 1", 10)); len(got) != 1 || got[0][0] != "CR-2" {
		t.Fatalf("search found %v", got)
	}
	if _, err := d.txn(createTxn("op-2", "CR", "again", "", "ann", 101)); err == nil || !strings.Contains(err.Error(), "UNIQUE") {
		t.Fatalf("a retried op id was taken: %v", err)
	}
	if got := d.one(`SELECT count(*) || '/' || (SELECT last_number FROM projects) FROM items`); got != "2/2" {
		t.Fatalf("after the retry: items/counter %s", got)
	}
}

// TestUpdateTxn: an update at the version read moves the item, its
// history and its search row; at any other version it changes no row
// (the caller reads stale), and its history and search rows follow suit.
func TestUpdateTxn(t *testing.T) {
	d := openSameJob(t)
	if _, err := d.txn(createTxn("op-1", "CR", "old title", "", "ann", 100)); err != nil {
		t.Fatal(err)
	}
	n, err := d.txn(updateTxn("op-2", "CR-1", 1, "brand new title", 200))
	if err != nil || n[updateApplied] != 1 {
		t.Fatalf("update at the version read: %v %v", n, err)
	}
	if got := d.one(`SELECT title || '@' || version FROM items WHERE key = 'CR-1'`); got != "brand new title@2" {
		t.Fatalf("item %s", got)
	}
	if got := d.rows(searchQuery("brand", 10)); len(got) != 1 {
		t.Fatalf("search for the new title found %v", got)
	}
	if got := d.rows(searchQuery("old", 10)); len(got) != 0 {
		t.Fatalf("search for the old title found %v", got)
	}
	n, err = d.txn(updateTxn("op-3", "CR-1", 1, "lost update", 300))
	if err != nil || n[updateApplied] != 0 {
		t.Fatalf("update at a stale version: %v %v", n, err)
	}
	if got := d.one(`SELECT count(*) FROM history WHERE field = 'title'`); got != "1" {
		t.Fatalf("history rows of title changes: %s, want 1", got)
	}
	if got := d.rows(searchQuery("lost", 10)); len(got) != 0 {
		t.Fatalf("a stale update reached the index: %v", got)
	}
}

// TestGetQueries: the get reads the item with its fields, tags and
// watchers, and the fields' defaults where it has none.
func TestGetQueries(t *testing.T) {
	d := openSameJob(t)
	for i, op := range []string{"op-1", "op-2"} {
		if _, err := d.txn(createTxn(op, "CR", fmt.Sprint("item ", i), "", "ann", 100)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.txn(dressItem("CR-1", []string{"perf", "backend"}, []string{"bob", "ann"})); err != nil {
		t.Fatal(err)
	}
	q := getQueries("CR-1")
	item, tags, watchers := d.rows(q[0]), d.rows(q[1]), d.rows(q[2])
	if len(item) != 1 || item[0][1] != "CR-1" || item[0][11] != "high" || item[0][14] != "bug" {
		t.Fatalf("item %v", item)
	}
	if fmt.Sprint(tags, watchers) != "[[backend] [perf]] [[ann] [bob]]" {
		t.Fatalf("tags %v watchers %v", tags, watchers)
	}
	if bare := d.rows(getQueries("CR-2")[0]); len(bare) != 1 || bare[0][11] != "none" || bare[0][14] != "task" {
		t.Fatalf("an undressed item %v", bare)
	}
}

// TestSeedAndBulk: a seeded project holds the corpus's items as creates
// would have filed them, and a bulk update moves every one of them and
// only them, a history row each, then back.
func TestSeedAndBulk(t *testing.T) {
	d := openSameJob(t)
	for _, p := range []string{"C0", "C1"} {
		if _, err := d.txn(newProject(p, p)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.txn(seedItems("C0", 1, 0, 300, 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.txn(seedItems("C0", 301, 300, 200, 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.txn(seedItems("C1", 1, 500, 50, 100)); err != nil {
		t.Fatal(err)
	}
	if got := d.one(`SELECT last_number || '/' || (SELECT count(*) FROM items WHERE project = 'C0') || '/' || (SELECT count(*) FROM items_fts) FROM projects WHERE key = 'C0'`); got != "500/500/550" {
		t.Fatalf("counter/items/index %s", got)
	}
	title, _ := corpusText(42)
	if got := d.one(`SELECT title FROM items WHERE key = 'C0-43'`); got != title {
		t.Fatalf("C0-43 is %q, want the corpus's item 42 %q", got, title)
	}
	for n := 0; n < 2; n++ {
		from, to := bulkStatuses(n)
		res, err := d.txn(bulkTxn(fmt.Sprint("bulk-", n), "C0", from, to, 200))
		if err != nil || res[1] != 500 || res[2] != 500 {
			t.Fatalf("bulk %d: %v %v", n, res, err)
		}
		if got := d.one(`SELECT group_concat(DISTINCT project || ':' || status) FROM items`); got != "C0:"+to+",C1:open" {
			t.Fatalf("after bulk %d: %s", n, got)
		}
	}
}

// TestCorpus: the corpus is the same for every call and varied within:
// the search terms match items of it, and some more than others.
func TestCorpus(t *testing.T) {
	a, b := corpusText(7)
	if a2, b2 := corpusText(7); a != a2 || b != b2 {
		t.Fatal("corpusText is not a function of its index")
	}
	if c, _ := corpusText(8); c == a || len(strings.Fields(a)) != 5 || len(strings.Fields(b)) != 16 {
		t.Fatalf("corpus texts %q %q", a, b)
	}
	seen := map[string]bool{}
	for r := 0; r < vocabularySize; r++ {
		if w := word(r); seen[w] {
			t.Fatalf("rank %d's word %q is another rank's", r, w)
		} else {
			seen[w] = true
		}
	}
	d := openSameJob(t)
	if _, err := d.txn(append(newProject("C0", "C0"), seedItems("C0", 1, 0, 2000, 1)...)); err != nil {
		t.Fatal(err)
	}
	hits := map[int]bool{}
	for i := 0; i < 40; i++ {
		n := len(d.rows(searchQuery(searchTerms(i), 2000)))
		hits[n] = true
		if i%2 == 0 && n == 0 {
			t.Errorf("one-term search %q matches nothing in 2000 items", searchTerms(i))
		}
	}
	if len(hits) < 5 {
		t.Errorf("the searches' match counts are too alike: %v", hits)
	}
}
