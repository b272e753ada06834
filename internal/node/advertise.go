package node

import (
	"log/slog"
	"net"
	"os"
	"strconv"
)

// defaultAdvertised is the address Metadata gives clients when none is
// configured: the bound listener, or, when it listens on every interface
// (an address nobody can dial), this host's name with the bound port, as
// Kafka does.
// advertisedOf is the address other nodes reach a listener bound at addr
// on: the host name in place of an unspecified IP.
func advertisedOf(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

func defaultAdvertised(name string, bound net.Addr, logger *slog.Logger) string {
	adv := advertisedOf(bound)
	if adv != bound.String() {
		logger.Warn("a Kafka listener binds every interface and no advertised address is set for it; advertising the host name (set advertised.listeners to choose)",
			"listener", name, "advertised", adv)
	}
	return adv
}
