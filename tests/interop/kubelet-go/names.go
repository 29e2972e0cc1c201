// SPDX-License-Identifier: GPL-2.0-or-later

package main

import (
	"regexp"
	"strings"
)

// The kubelet accepts a resource name only if v1helper.IsExtendedResourceName
// does (docs/kubelet.md §1.3). This is that function and the two validators it
// relies on, apimachinery's IsQualifiedName and IsDNS1123Subdomain.

const (
	dns1123SubdomainMaxLength = 253
	qualifiedNameMaxLength    = 63
)

var (
	dns1123SubdomainRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	qualifiedNameRe    = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
)

// isExtendedResourceName: not native (it has a "/" and no "kubernetes.io/"
// anywhere), not starting with "requests.", and "requests."+name is a
// qualified name.
func isExtendedResourceName(name string) bool {
	if !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/") {
		return false
	}
	if strings.HasPrefix(name, "requests.") {
		return false
	}
	return isQualifiedName("requests." + name)
}

// isQualifiedName: [prefix/]name, the prefix a DNS-1123 subdomain, the name
// 1..63 characters of [A-Za-z0-9_.-] starting and ending alphanumeric.
func isQualifiedName(value string) bool {
	parts := strings.Split(value, "/")
	var name string
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		prefix := parts[0]
		name = parts[1]
		if prefix == "" || len(prefix) > dns1123SubdomainMaxLength || !dns1123SubdomainRe.MatchString(prefix) {
			return false
		}
	default:
		return false
	}
	return name != "" && len(name) <= qualifiedNameMaxLength && qualifiedNameRe.MatchString(name)
}
