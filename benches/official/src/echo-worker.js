// The floor of a main-thread client call: a worker that answers every message with itself, so
// the page can time a bare postMessage round trip beside the client's calls.
self.onmessage = ({ data }) => self.postMessage(data);
