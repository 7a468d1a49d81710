package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Op kinds of a history record.
const (
	opAcquire = "acquire" // an acquisition attempt: Start is its call, End its reply
	opHold    = "hold"    // a fenced write made while holding, at Start (the store is the checker)
	opRelease = "release" // Start: the release is called (the hold ends), End: it returned
	// opReleasing is written as the release is called, before it is sent:
	// a worker killed before the reply leaves this alone, and the hold
	// ends here all the same (the release may have run).
	opReleasing = "releasing"
	opLost      = "lost"    // the hold's context ended with ErrLockLost, at Start
	opObserve   = "observe" // an observer heard of a leader (Token: its epoch; 0 vacant)
)

// Record is one line of a worker's history. Times are wall-clock Unix
// nanoseconds: every process of the run shares the host clock.
type Record struct {
	Topo   string `json:"topo"`
	Proc   string `json:"proc"` // worker and incarnation, e.g. "w1#2"
	Prim   string `json:"prim"` // lock, fair, rlock, wlock, sem, redlock, multi, election
	Name   string `json:"name"` // the lock's name
	Owner  string `json:"owner"`
	Op     string `json:"op"`
	Token  int64  `json:"token,omitempty"`  // fencing token or epoch; 0 when none
	Weight int64  `json:"weight,omitempty"` // a semaphore permit's weight
	Size   int64  `json:"size,omitempty"`   // the semaphore's size
	NoSync bool   `json:"nosync,omitempty"` // taken with replica sync off
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	OK     bool   `json:"ok"`
	Err    string `json:"err,omitempty"`
}

// recorder appends records to a worker's own file, one write(2) a line, so
// that a line is complete in the file even when the process is killed
// right after.
type recorder struct {
	mu sync.Mutex
	f  *os.File
}

func newRecorder(path string) (*recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &recorder{f: f}, nil
}

func (r *recorder) add(rec Record) {
	b, err := json.Marshal(rec)
	if err != nil {
		return // a Record always marshals
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.f.Write(append(b, '\n'))
}

func (r *recorder) close() error { return r.f.Close() }

// readHistory reads every history file under dir. A last line cut short
// by a kill is skipped.
func readHistory(dir string) ([]Record, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	var out []Record
	for _, name := range files {
		recs, err := readHistoryFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

func readHistoryFile(name string) ([]Record, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var rec Record
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			out = append(out, rec)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history %s: %w", name, err)
	}
	return out, nil
}
