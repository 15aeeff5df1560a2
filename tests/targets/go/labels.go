// SPDX-License-Identifier: GPL-2.0-or-later
// labels: goroutines parked under runtime/pprof labels, for proffs'
// goroutine.txt and goroutine.pb.gz (issue 26): two with worker=a, one
// with worker=b and shard=7, one with worker=c and, nested, stage=inner,
// one with 27 labels (a map that is still growing when the last is
// put: 4 buckets of Go 1.19 hold 26), one with values Go must quote,
// one with no labels; main burns CPU under role=main. On SIGUSR1 it
// writes its own goroutine profile, debug=1 text to os.Args[1] and
// the pprof (debug=0) to os.Args[1]+".pb.gz" (the text renamed into
// place last). Prints "ready" once every goroutine is parked, from burn,
// under role=main: a read that follows the line at once finds main
// labelled.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"
)

var sink uint64

//go:noinline
func waitLabeled(c chan int) {
	<-c
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

func write(path string, debug int) {
	f, err := os.Create(path)
	if err != nil {
		panic(err)
	}
	pprof.Lookup("goroutine").WriteTo(f, debug)
	f.Close()
}

func main() {
	out := os.Args[1]
	c := make(chan int)
	ctx := context.Background()
	start := func(n int, labels pprof.LabelSet) {
		for i := 0; i < n; i++ {
			go pprof.Do(ctx, labels, func(context.Context) {
				waitLabeled(c)
			})
		}
	}
	start(2, pprof.Labels("worker", "a"))
	start(1, pprof.Labels("worker", "b", "shard", "7"))
	go pprof.Do(ctx, pprof.Labels("worker", "c"),
		func(ctx context.Context) {
			pprof.Do(ctx, pprof.Labels("stage", "inner"),
				func(context.Context) { waitLabeled(c) })
		})
	var many []string
	for i := 0; i < 27; i++ {
		many = append(many, fmt.Sprintf("k%02d", i), fmt.Sprint(i))
	}
	start(1, pprof.Labels(many...))
	start(1, pprof.Labels("quote", "say \"hi\"\tand\\ \u00e9\u00a0\x01",
		"z", ""))
	go waitLabeled(c)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		for range sig {
			write(out+".pb.gz", 0)
			write(out+".tmp", 1)
			os.Rename(out+".tmp", out)
		}
	}()
	for runtime.NumGoroutine() < 10 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	pprof.Do(ctx, pprof.Labels("role", "main"), func(context.Context) {
		burn()
	})
}
