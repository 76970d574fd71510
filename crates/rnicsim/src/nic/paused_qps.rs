//! Queue pairs the scheduler picked while PFC paused their traffic class (IEEE 802.1Qbb §36),
//! set aside per class until the pause ends. A bit per class says which classes hold any, so
//! that the transmit path, which asks on every pick, looks at nothing when nothing is set aside.

/// The queue pairs set aside, per traffic class, first set aside first.
#[derive(Clone, Debug, Default)]
pub struct PausedQps {
    queues: [Vec<u32>; 8],
    /// Bit `c` is set when class `c` holds a queue pair.
    classes: u8,
}

impl PausedQps {
    /// Sets queue pair `q` of traffic class `class` aside.
    pub fn park(&mut self, class: usize, q: u32) {
        self.queues[class].push(q);
        self.classes |= 1 << class;
    }

    /// The classes that hold queue pairs, lowest first.
    pub fn classes(&self) -> impl Iterator<Item = usize> {
        let mut m = self.classes;
        std::iter::from_fn(move || {
            (m != 0).then(|| {
                let c = m.trailing_zeros() as usize;
                m &= m - 1;
                c
            })
        })
    }

    /// Takes class `class`'s queue pairs back, first set aside first.
    pub fn take(&mut self, class: usize) -> Vec<u32> {
        self.classes &= !(1 << class);
        std::mem::take(&mut self.queues[class])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_holding_queue_pairs_are_listed_lowest_first_until_taken() {
        let mut p = PausedQps::default();
        assert!(p.classes().next().is_none());
        p.park(5, 9);
        p.park(3, 1);
        p.park(5, 2);
        p.park(7, 4);
        assert_eq!(p.classes().collect::<Vec<_>>(), [3, 5, 7]);
        assert_eq!(p.take(5), [9, 2]);
        assert_eq!(p.classes().collect::<Vec<_>>(), [3, 7]);
        assert_eq!(p.take(3), [1]);
        assert_eq!(p.take(7), [4]);
        assert!(p.classes().next().is_none() && p.take(0).is_empty());
    }
}
