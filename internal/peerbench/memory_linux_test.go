package peerbench

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestResidentCountsAMappedPageOnce maps one file twice in this process,
// as two SQLite connections map a database, and reads every page through
// both: RSS grows by the file twice over, PSS by it once.
func TestResidentCountsAMappedPageOnce(t *testing.T) {
	const size = 16 << 20
	path := filepath.Join(t.TempDir(), "mapped")
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	me := []int{os.Getpid()}
	before, err := processesMemory(me)
	if err != nil {
		t.Fatal(err)
	}
	var sum byte
	for range 2 {
		m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Munmap(m)
		for i := 0; i < size; i += os.Getpagesize() {
			sum += m[i]
		}
	}
	after, err := processesMemory(me)
	if err != nil {
		t.Fatal(err)
	}
	rss, pss := after.RSS-before.RSS, after.PSS-before.PSS
	t.Logf("two mappings of %d MiB read through: RSS +%d MiB, PSS +%d MiB (%d)", size>>20, rss>>20, pss>>20, sum)
	if rss < size*7/4 || pss > size*5/4 || pss < size*3/4 {
		t.Errorf("two mappings of %d MiB: RSS grew %d MiB, PSS %d MiB; want about twice and once the file", size>>20, rss>>20, pss>>20)
	}
}
