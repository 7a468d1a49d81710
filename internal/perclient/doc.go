// Package perclient keeps state per Redis client (a notification hub, a
// batching pipe) without keeping the client alive: a service that makes
// clients per tenant or per request, and drops them, must not grow. Map is
// keyed by a weak pointer to the client, and an entry goes when its client
// is garbage collected; Ref gives the state a way back to its client that
// does not pin it either. Clients that are not go-redis's own pointer
// types (another implementation of redis.UniversalClient) are held
// strongly, as a plain map would.
package perclient
