package main

import (
	"reflect"
	"testing"
	"time"
)

var testLayout = layout{Topos: []string{"sentinel", "redlock", "cluster"}, Workers: 3, Lease: 2 * time.Second, Clock: true}

func TestScheduleDeterministic(t *testing.T) {
	a := makeSchedule(7, testLayout, 3*time.Second, 126*time.Second)
	b := makeSchedule(7, testLayout, 3*time.Second, 126*time.Second)
	if len(a) < 20 {
		t.Fatalf("%d faults in 2 minutes, want at least 20", len(a))
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two schedules")
	}
	if c := makeSchedule(8, testLayout, 3*time.Second, 126*time.Second); reflect.DeepEqual(a, c) {
		t.Fatal("seeds 7 and 8 gave the same schedule")
	}
}

func TestScheduleShape(t *testing.T) {
	s := makeSchedule(1, testLayout, 3*time.Second, 126*time.Second)
	kinds := map[string]bool{}
	concurrent := false
	for i, f := range s {
		kinds[f.Kind] = true
		if f.Start < 3*time.Second || f.End > 126*time.Second || f.End <= f.Start {
			t.Errorf("fault %v outside [3s, 126s] or empty", f)
		}
		if conflicts(append(append([]Fault(nil), s[:i]...), s[i+1:]...), f) {
			t.Errorf("fault %v conflicts with another", f)
		}
		if i > 0 && f.Start < s[i-1].End {
			concurrent = true
		}
		if f.Kind == fStopWorker && f.End-f.Start <= testLayout.Lease {
			t.Errorf("fault %v: a worker stop not past the lease", f)
		}
	}
	if !concurrent {
		t.Error("no two faults at once")
	}
	for _, k := range []string{fPauseServer, fKillServer, fPartition, fStopWorker, fKillWorker} {
		if !kinds[k] {
			t.Errorf("no %s fault in 2 minutes", k)
		}
	}
}
