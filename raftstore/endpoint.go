package raftstore

import (
	"net"
	"slices"
	"strconv"
)

// On returns b with Host and Port set to its listener's advertised
// address, as Kafka answers a client with the endpoints of the listener it
// came in on. ok is false when b registered listeners and none has that
// name. A node that registered none (an older one), or an empty listener
// name, keeps Host and Port.
func (b BrokerInfo) On(listener string) (BrokerInfo, bool) {
	if listener == "" || len(b.Listeners) == 0 {
		return b, true
	}
	for _, e := range b.Listeners {
		if e.Listener == listener {
			b.Host, b.Port = e.Host, e.Port
			return b, true
		}
	}
	return b, false
}

// Equal reports whether b and o register the same things.
func (b BrokerInfo) Equal(o BrokerInfo) bool {
	return b.NodeID == o.NodeID && b.Host == o.Host && b.Port == o.Port && b.Rack == o.Rack &&
		b.Admin == o.Admin && slices.Equal(b.Listeners, o.Listeners)
}

// String is the endpoint as advertised.listeners writes it,
// NAME://host:port.
func (e Endpoint) String() string {
	return e.Listener + "://" + net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
}
