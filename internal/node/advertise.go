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
func defaultAdvertised(bound net.Addr, logger *slog.Logger) string {
	tcp, ok := bound.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return bound.String()
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	adv := net.JoinHostPort(host, strconv.Itoa(tcp.Port))
	logger.Warn("the Kafka listener binds every interface and no advertised address is set; advertising the host name (set advertised.listeners to choose)",
		"advertised", adv)
	return adv
}
