// SPDX-License-Identifier: GPL-2.0-or-later
// goroutines: known goroutines for proffs' goroutine.txt (issue 26).
// Three goroutines parked in a channel receive in waitHere, one in
// time.Sleep in sleepHere, one blocked on a sync.Mutex in lockHere, one
// locked to its thread (runtime.LockOSThread) in an empty select in
// pinnedHere, and main burning CPU in burn. On SIGUSR1 it writes its own
// goroutine dump (pprof.Lookup("goroutine").WriteTo(f, 2)) to os.Args[1]
// (through a temporary file, renamed when complete). Prints "ready" once
// every goroutine is parked, from burn itself: a read that follows the
// line at once can meet main still returning from that write, and then
// main.burn must already be on its stack. With a second argument "churn", goroutines
// also start and end all the time, each growing its stack (the runtime
// moves it) before it ends: what a dump read while the program runs
// races with.
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
func pinnedHere() {
	runtime.LockOSThread()
	select {}
}

//go:noinline
func burn() {
	fmt.Println("ready")
	x := uint64(1)
	for {
		for i := 0; i < 1000000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink = x
	}
}

//go:noinline
func deep(n int) int {
	var pad [64]byte
	pad[n%64] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return deep(n-1) + int(pad[n%64])
}

func churn() {
	for {
		done := make(chan int, 64)
		for i := 0; i < 64; i++ {
			go func(i int) {
				done <- deep(100 + i*10)
			}(i)
		}
		for i := 0; i < 64; i++ {
			<-done
		}
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
	go pinnedHere()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		for range sig {
			dump(out)
		}
	}()
	for runtime.NumGoroutine() < 9 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if len(os.Args) > 2 && os.Args[2] == "churn" {
		go churn()
	}
	burn()
}
