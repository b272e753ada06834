package topic

// Source tells where a config's effective value comes from. The numbers are
// the ConfigSource codes of Kafka's DescribeConfigs response.
type Source int

// Config value sources.
const (
	SourceUnknown Source = 0 // not a topic config
	DynamicTopic  Source = 1 // DYNAMIC_TOPIC_CONFIG: an override set on the topic
	StaticBroker  Source = 4 // STATIC_BROKER_CONFIG: the broker's configured default
	Default       Source = 5 // DEFAULT_CONFIG: Kafka's built-in default
)

// String returns Kafka's name for the source.
func (s Source) String() string {
	switch s {
	case DynamicTopic:
		return "DYNAMIC_TOPIC_CONFIG"
	case StaticBroker:
		return "STATIC_BROKER_CONFIG"
	case Default:
		return "DEFAULT_CONFIG"
	}
	return "UNKNOWN"
}
