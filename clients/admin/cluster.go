package admin

import (
	"context"
	"fmt"
)

// ClusterInfo describes the cluster as Metadata reports it.
type ClusterInfo struct {
	ClusterID string `json:"cluster_id"`
	// Controller is the node the cluster names as controller (brokerd: the
	// raft leader), -1 if none.
	Controller int32        `json:"controller"`
	Brokers    []BrokerInfo `json:"brokers"`
	Topics     int          `json:"topics"`
}

// BrokerInfo is one broker.
type BrokerInfo struct {
	NodeID int32  `json:"node_id"`
	Host   string `json:"host"`
	Port   int32  `json:"port"`
	Rack   string `json:"rack,omitempty"`
}

// ClusterInfo returns the cluster id, controller, brokers and topic count.
func (c *Client) ClusterInfo(ctx context.Context) (ClusterInfo, error) {
	m, err := c.adm.Metadata(ctx)
	if err != nil {
		return ClusterInfo{}, fmt.Errorf("cluster metadata: %w", err)
	}
	info := ClusterInfo{ClusterID: m.Cluster, Controller: m.Controller, Topics: len(m.Topics)}
	for _, b := range m.Brokers {
		bi := BrokerInfo{NodeID: b.NodeID, Host: b.Host, Port: b.Port}
		if b.Rack != nil {
			bi.Rack = *b.Rack
		}
		info.Brokers = append(info.Brokers, bi)
	}
	return info, nil
}
