// SPDX-License-Identifier: GPL-2.0-or-later

package main

import (
	"strings"
	"testing"
)

// The table of docs/kubelet.md §1.3, plus the length limits.
func TestIsExtendedResourceName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"nvidia.com/gpu", true},
		{"example.com/widget", true},
		{"example.com/GPU_x.1", true},
		{"gpu", false},
		{"kubernetes.io/gpu", false},
		{"foo.kubernetes.io/gpu", false},
		{"requests.example.com/gpu", false},
		{"Example.com/gpu", false},
		{"example_com/gpu", false},
		{"example.com/", false},
		{"/gpu", false},
		{"a.com/b/c", false},
		{"example.com/-gpu", false},
		{"example.com/gpu-", false},
		{"example.com/" + strings.Repeat("a", 63), true},
		{"example.com/" + strings.Repeat("a", 64), false},
		// "requests." is prepended, so the domain may have 244 characters.
		{strings.Repeat("a", 244) + "/gpu", true},
		{strings.Repeat("a", 245) + "/gpu", false},
	} {
		if got := isExtendedResourceName(tc.name); got != tc.ok {
			t.Errorf("isExtendedResourceName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestAdmitFlag(t *testing.T) {
	var a admitList
	if err := a.Set("example.com/widget=2"); err != nil {
		t.Fatal(err)
	}
	if len(a) != 1 || a[0].resource != "example.com/widget" || a[0].n != 2 {
		t.Fatalf("got %+v", a)
	}
	for _, bad := range []string{"example.com/widget", "=2", "example.com/widget=0", "example.com/widget=x"} {
		if err := a.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}
