// Package explain walks a turn's answer back to its cause: the context each
// model call was shown (from the run's recording), the recall receipts that
// offered it, the stored entries those pieces came from and the earlier
// turns that wrote them, with honesty flags wherever a link is missing. It
// ranks suspects with correlational proxies and records ablation reruns that
// confirm or clear them.
package explain
