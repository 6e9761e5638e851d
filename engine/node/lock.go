package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// LockFileName is the data directory's lock: one process holds a data
// directory at a time.
const LockFileName = "crewlet.lock"

// HeldError refuses a data directory another process holds.
type HeldError struct {
	Dir    string
	PID    int
	Holder string
}

func (e *HeldError) Error() string {
	who := e.Holder
	if who == "" {
		who = "another crewlet"
	}
	return fmt.Sprintf("data directory %s is held by process %d (%s). Stop it, or run `crewlet mcp --node URL` to use that running node instead of opening the directory a second time.", e.Dir, e.PID, who)
}

type holder struct {
	PID     int       `json:"pid"`
	Holder  string    `json:"holder"`
	Started time.Time `json:"started"`
}

// lockDir takes the data directory's lock, or says who holds it.
func lockDir(dir, who string) (*os.File, error) {
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			var h holder
			data, _ := os.ReadFile(path)
			_ = json.Unmarshal(data, &h)
			return nil, &HeldError{Dir: dir, PID: h.PID, Holder: h.Holder}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	data, _ := json.Marshal(holder{PID: os.Getpid(), Holder: who, Started: time.Now().UTC()})
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(data, 0)
		_ = f.Sync()
	}
	return f, nil
}
