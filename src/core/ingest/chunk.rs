//! Splitting a conversation into overlapping chunks for the full pass, and
//! into small windows for the detail pass.

/// Target size of one full-pass chunk, in characters.
pub const CHUNK_CHARS: usize = 10_000;
/// Messages repeated at the start of the next chunk.
pub const CHUNK_OVERLAP: usize = 2;
/// Detail-pass window size and step, in messages.
pub const DETAIL_WINDOW: usize = 6;
pub const DETAIL_STEP: usize = 4;
/// Conversations this long or longer get a detail pass.
pub const DETAIL_MIN_MESSAGES: usize = 9;

/// Index ranges `[start, end)` of chunks of about `max_chars` characters
/// (a single longer message is a chunk by itself), each starting `overlap`
/// messages before the previous one ended.
pub fn split(lengths: &[usize], max_chars: usize, overlap: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < lengths.len() {
        let mut end = start;
        let mut size: usize = 0;
        for &len in lengths.get(start..).unwrap_or_default() {
            if end != start && size.saturating_add(len) > max_chars {
                break;
            }
            size = size.saturating_add(len);
            end = end.saturating_add(1);
        }
        out.push((start, end));
        if end >= lengths.len() {
            break;
        }
        // Step back for overlap, but always make progress.
        start = end.saturating_sub(overlap).max(start.saturating_add(1));
    }
    out
}

/// Windows `[start, end)` for the detail pass.
pub fn windows(n: usize, size: usize, step: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let end = start.saturating_add(size).min(n);
        out.push((start, end));
        if end == n {
            break;
        }
        // A zero step would never reach the end.
        start = start.saturating_add(step.max(1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_chunks_cover_everything_with_overlap() {
        let lens = vec![3000; 10];
        let chunks = split(&lens, 10_000, 2);
        assert_eq!(chunks.first().unwrap().0, 0);
        assert_eq!(chunks.last().unwrap().1, 10);
        for w in chunks.windows(2) {
            assert_eq!(w[1].0, w[0].1 - 2, "two messages overlap");
        }
    }

    #[test]
    fn test_oversized_message_is_its_own_chunk() {
        assert_eq!(split(&[50_000, 10], 10_000, 2), vec![(0, 1), (1, 2)]);
    }

    #[test]
    fn test_zero_and_huge_window_sizes_still_end() {
        assert_eq!(windows(3, 2, 0), vec![(0, 2), (1, 3)]);
        assert_eq!(split(&[usize::MAX, usize::MAX], 10, usize::MAX), vec![(0, 1), (1, 2)]);
        assert_eq!(split(&[usize::MAX, usize::MAX], usize::MAX, 0), vec![(0, 2)]);
    }

    #[test]
    fn test_windows_reach_the_end() {
        assert_eq!(windows(10, 6, 4), vec![(0, 6), (4, 10)]);
        assert_eq!(windows(3, 6, 4), vec![(0, 3)]);
    }
}
