package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		args   []string
		status int
		out    []string // lines the output must hold, in order
		errOut string
	}{
		{nil, 0, []string{
			"policy: 100ms×2 up to 10s, full jitter, 10 retries, 30s of waiting",
			"1     0s … 100ms",
			"9       0s … 10s",
			"32.7s  ← past 30s of waiting",
			"ends: ", // unseeded: either limit may end it
		}, ""},
		{[]string{"-seed", "1"}, 0, []string{
			"policy: 100ms×2 up to 10s, full jitter, 10 retries, 30s of waiting",
			"ends: 10 retries handed out",
			"the draws: 10 waits, 19.391s of waiting",
		}, ""},
		{[]string{"-seed", "4"}, 0, []string{
			"ends: this draw would take the waiting past 30s",
			"the draws: 9 waits, 23.792s of waiting",
		}, ""},
		{[]string{"-seed", "7", "100ms,", "equal", "jitter,", "20s", "of", "waiting"}, 0, []string{
			"policy: 100ms×2 uncapped, equal jitter, 20s of waiting",
			"8   6.4s … 12.8s    7.644s              25.5s  ← past 20s of waiting",
			"9  12.8s … 25.6s   refused",
			"ends: this draw would take the waiting past 20s",
			"the draws: 8 waits, 17.519s of waiting",
		}, ""},
		{[]string{"-seed", "1", "1s×1.5 up to 1m, decorrelated jitter, 8 retries"}, 0, []string{
			"1        1s … 3s",
			"2        1s … 9s",
			"3       1s … 27s",
			"4      1s … 1m0s",
			"decorrelated: each draw comes from the one before",
		}, ""},
		{[]string{"-n", "3", "100ms"}, 0, []string{
			"warning: no limit: it never gives up",
			"3     0s … 400ms",
			"… and so on, without end: retry 4 waits between 0s and 800ms",
		}, ""},
		{[]string{"no wait"}, 0, []string{"warning: it waits nothing and never gives up"}, ""},
		{[]string{"100ms, fulll jitter"}, 2, nil, `unknown word "fulll"`},
		{[]string{"100ms, 0 retries"}, 2, nil, `"0 retries": want at least 1`},
		{[]string{"-bogus"}, 2, nil, "flag provided but not defined"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if got := run(tt.args, &stdout, &stderr); got != tt.status {
			t.Errorf("run(%q) = %d, want %d; stderr: %s", tt.args, got, tt.status, stderr.String())
		}
		out := stdout.String()
		for _, line := range tt.out {
			i := strings.Index(out, line)
			if i < 0 {
				t.Errorf("run(%q): output lacks %q, in order:\n%s", tt.args, line, stdout.String())
				break
			}
			out = out[i+len(line):]
		}
		if !strings.Contains(stderr.String(), tt.errOut) || (tt.errOut == "" && stderr.Len() > 0) {
			t.Errorf("run(%q): stderr %q, want it to contain %q", tt.args, stderr.String(), tt.errOut)
		}
	}
}
