// Command benchratio prints the ratios that package benchmark's BenchmarkSends
// reports, against the numbers of SPEC §5, as a Markdown table.
//
//	go test -run='^$' -bench=. -count=5 ./internal/e2e/benchmark | tee bench.txt
//	go run ./internal/e2e/benchmark/benchratio bench.txt
//
// It reads benchmark output (files, or standard input when none are named), takes
// every sample of each sub-benchmark's kit/bare or replay/first metric, and prints
// their median, range and count with the SPEC's bound and whether the median meets
// it. It exits with status 1 when a median misses its bound, and 2 when it finds no
// ratio.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A bound is a SPEC §5 number a ratio is held to.
type bound struct {
	atLeast bool
	value   float64
}

func (b bound) met(v float64) bool {
	if b.atLeast {
		return v >= b.value
	}
	return v <= b.value
}

func (b bound) String() string {
	if b.atLeast {
		return fmt.Sprintf("≥ %.2f", b.value)
	}
	return fmt.Sprintf("≤ %.2f", b.value)
}

// boundOf returns the bound SPEC §5 sets for a sub-benchmark, and false when it sets
// none (the figure is informative).
func boundOf(name string) (bound, bool) {
	switch {
	case strings.Contains(name, "/send=unkeyed/"): // unkeyed throughput, kit/bare
		return bound{true, 0.97}, true
	case strings.Contains(name, "/send=first/") && strings.HasSuffix(name, "/index=mem"):
		// keyed first sends (memstore) / bare unkeyed, throughput
		return bound{true, 0.90}, true
	case strings.Contains(name, "/send=replay/"): // replay latency / first send latency
		return bound{false, 0.5}, true
	}
	return bound{}, false
}

var procSuffix = regexp.MustCompile(`-\d+$`)

func main() {
	var in []io.Reader
	for _, path := range os.Args[1:] {
		if path == "-h" || path == "-help" || path == "--help" {
			fmt.Println("usage: benchratio [file ...]: prints the kit/bare and replay/first ratios of go test -bench output (standard input when no file is named) against SPEC §5")
			return
		}
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchratio:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = append(in, f)
	}
	if len(in) == 0 {
		in = append(in, os.Stdin)
	}
	type series struct {
		unit    string
		samples []float64
	}
	var order []string
	all := map[string]*series{}
	sc := bufio.NewScanner(io.MultiReader(in...))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := procSuffix.ReplaceAllString(f[0], "")
		for i := 2; i+1 < len(f); i += 2 {
			unit := f[i+1]
			if unit != "kit/bare" && unit != "replay/first" {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			s := all[name]
			if s == nil {
				s = &series{unit: unit}
				all[name] = s
				order = append(order, name)
			}
			s.samples = append(s.samples, v)
		}
	}
	if len(order) == 0 {
		fmt.Fprintln(os.Stderr, "benchratio: no kit/bare or replay/first metric in the input")
		os.Exit(2)
	}
	missed := false
	fmt.Println("| benchmark | ratio | median | range | n | goal | verdict |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, name := range order {
		s := all[name]
		xs := slices.Clone(s.samples)
		slices.Sort(xs)
		med := xs[len(xs)/2]
		if len(xs)%2 == 0 {
			med = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
		}
		spec, verdict := "—", "informative"
		if b, ok := boundOf(name); ok {
			spec = b.String()
			verdict = "met"
			if !b.met(med) {
				verdict = "**not met**"
				missed = true
			}
		}
		short := strings.TrimPrefix(name, "BenchmarkSends/")
		fmt.Printf("| %s | %s | %.3f | %.3f–%.3f | %d | %s | %s |\n", short, s.unit, med, xs[0], xs[len(xs)-1], len(xs), spec, verdict)
	}
	if missed {
		os.Exit(1)
	}
}
