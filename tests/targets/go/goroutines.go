// SPDX-License-Identifier: GPL-2.0-or-later
// goroutines: known goroutines for proffs' goroutine.txt (issue 26).
// Three goroutines parked in a channel receive in waitHere, one in
// time.Sleep in sleepHere, one blocked on a sync.Mutex in lockHere, and
// main burning CPU in burn. On SIGUSR1 it writes its own goroutine dump
// (pprof.Lookup("goroutine").WriteTo(f, 2)) to os.Args[1] (through a
// temporary file, renamed when complete). Prints "ready" once every
// goroutine is parked.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"
)

var (
	mu   sync.Mutex
	sink uint64
)

//go:noinline
func waitHere(c chan int) {
	<-c
}

//go:noinline
func sleepHere() {
	time.Sleep(time.Hour)
}

//go:noinline
func lockHere() {
	mu.Lock()
}

//go:noinline
func burn() {
	x := uint64(1)
	for {
		for i := 0; i < 1000000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink = x
	}
}

func dump(out string) {
	f, err := os.Create(out + ".tmp")
	if err != nil {
		panic(err)
	}
	pprof.Lookup("goroutine").WriteTo(f, 2)
	f.Close()
	os.Rename(out+".tmp", out)
}

func main() {
	out := os.Args[1]
	c := make(chan int)
	for i := 0; i < 3; i++ {
		go waitHere(c)
	}
	go sleepHere()
	mu.Lock()
	go lockHere()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		for range sig {
			dump(out)
		}
	}()
	for runtime.NumGoroutine() < 8 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	fmt.Println("ready")
	burn()
}
