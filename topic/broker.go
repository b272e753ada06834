package topic

import (
	"fmt"
	"strconv"
)

// A brokerUnit is a broker config that Kafka reads, in a coarser unit, when
// a topic config's main broker key is not set: log.retention.hours stands in
// for log.retention.ms, for instance.
type brokerUnit struct {
	key    string
	typ    Type  // Int or Long, as Kafka declares the broker key
	min    int64 // smallest value Kafka accepts for the broker key
	factor int64 // milliseconds per unit
}

const noMin = -1 << 63

// brokerFallbacks lists, per topic config, the broker keys read after
// Def.BrokerKey, in Kafka's order of precedence.
var brokerFallbacks = map[string][]brokerUnit{
	RetentionMs: {
		{key: "log.retention.minutes", typ: Int, min: noMin, factor: 60_000},
		{key: "log.retention.hours", typ: Int, min: noMin, factor: 3_600_000},
	},
	SegmentMs: {
		{key: "log.roll.hours", typ: Int, min: 1, factor: 3_600_000},
	},
	SegmentJitterMs: {
		{key: "log.roll.jitter.hours", typ: Int, min: 0, factor: 3_600_000},
	},
	FlushMs: {
		{key: "log.flush.scheduler.interval.ms", typ: Long, min: noMin, factor: 1},
	},
}

// DefaultsFromBroker picks the topic defaults out of a broker's config,
// keyed the way Kafka's server.properties keys them (log.retention.ms,
// log.segment.bytes, message.max.bytes, ...). Keys that supply no topic
// default are ignored. Like Kafka, it falls back to log.retention.minutes
// and log.retention.hours, log.roll.hours, log.roll.jitter.hours and
// log.flush.scheduler.interval.ms when the millisecond key is absent, and
// it turns any negative retention time into -1 (no limit). Bad values wrap
// ErrInvalidConfig and name the broker key.
func DefaultsFromBroker(props map[string]string) (Defaults, error) {
	d := Defaults{}
	for _, def := range defs {
		v, err := brokerValue(def, props)
		if err != nil {
			return nil, err
		}
		if v != "" {
			d[def.Name] = v
		}
	}
	if err := Resolve(nil, d).conflicts(); err != nil {
		return nil, fmt.Errorf("broker defaults: %w", err)
	}
	return d, nil
}

// brokerValue returns the default for def found in props, or "" if props
// has none.
func brokerValue(def Def, props map[string]string) (string, error) {
	if v, ok := props[def.BrokerKey]; ok {
		if def.Name == RetentionMs {
			return retentionFromBroker(def.BrokerKey, v, 1)
		}
		if err := def.Validate(v); err != nil {
			return "", fmt.Errorf("%w: broker config %s=%s: %w", ErrInvalidConfig, def.BrokerKey, quote(v), err)
		}
		return normalize(v), nil
	}
	for _, u := range brokerFallbacks[def.Name] {
		v, ok := props[u.key]
		if !ok {
			continue
		}
		if def.Name == RetentionMs {
			return retentionFromBroker(u.key, v, u.factor)
		}
		n, err := parseInt(v, bitsOf(u.typ))
		if err == nil && n < u.min {
			err = fmt.Errorf("must be at least %d", u.min)
		}
		if err != nil {
			return "", fmt.Errorf("%w: broker config %s=%s: %w", ErrInvalidConfig, u.key, quote(v), err)
		}
		return strconv.FormatInt(n*u.factor, 10), nil
	}
	return "", nil
}

// retentionFromBroker converts a broker retention time in units of factor
// milliseconds. Kafka reads any negative broker retention as -1.
func retentionFromBroker(key, v string, factor int64) (string, error) {
	bits := 64
	if factor != 1 {
		bits = 32 // log.retention.minutes and .hours are ints
	}
	n, err := parseInt(v, bits)
	if err != nil {
		return "", fmt.Errorf("%w: broker config %s=%s: %w", ErrInvalidConfig, key, quote(v), err)
	}
	if n < 0 {
		return "-1", nil
	}
	return strconv.FormatInt(n*factor, 10), nil
}
