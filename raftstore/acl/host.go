package acl

import (
	"net/netip"
	"strconv"
	"strings"
)

// CanonicalHost writes an IP address the way Kafka's ACL hosts compare
// it: as Java's InetAddress.getHostAddress prints a client's address.
// IPv4 (an IPv4-mapped IPv6 address included, which Java makes an
// Inet4Address) is dotted; IPv6 is eight groups of lower-case hex without
// leading zeros and without "::" compression (0:0:0:0:0:0:0:1), with its
// zone after "%". Anything else (the wildcard, a host name) is returned
// as it is.
func CanonicalHost(host string) string {
	if host == WildcardHost || host == "" {
		return host
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	return canonicalAddr(addr)
}

func canonicalAddr(addr netip.Addr) string {
	if addr.Is4() || addr.Is4In6() {
		return addr.Unmap().String()
	}
	var b strings.Builder
	a := addr.As16()
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.FormatUint(uint64(a[i])<<8|uint64(a[i+1]), 16))
	}
	if z := addr.Zone(); z != "" {
		b.WriteByte('%')
		b.WriteString(z)
	}
	return b.String()
}

// CanonicalIP is CanonicalHost of a connection's address.
func CanonicalIP(ip []byte, zone string) string {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return ""
	}
	return canonicalAddr(addr.WithZone(zone))
}
