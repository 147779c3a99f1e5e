//! Decoding state in place: the reader a snapshot is decoded with, [`DecodeInPlace`] (state
//! that overwrites its own storage instead of building a copy on the stack) and the column
//! decoder behind it. Below every index (`avl`, `job_table`, `rank`, `timers`), which
//! implement it, and below `scheduler::snapshot`, which drives it: the indexes need not
//! import the scheduler to be restorable.

use serde::de::DeserializeOwned;

/// The postcard reader a snapshot is decoded with.
pub(crate) type Reader<'de> = postcard::Deserializer<'de, postcard::de_flavors::Slice<'de>>;

/// State that decodes into its own storage ([`Scheduler::restore_in_place`](crate::scheduler::Scheduler::restore_in_place)): no copy of it
/// is built on the stack. Reads exactly what the `Serialize` derive wrote, field by field.
pub(crate) trait DecodeInPlace {
    /// Overwrites `self` with the next value in `de`. On an error `self` is valid but
    /// partly overwritten; [`reset`](Self::reset) empties it.
    fn decode_in_place(&mut self, de: &mut Reader<'_>) -> postcard::Result<()>;
    /// Back to the empty state (as `new()`), in place.
    fn reset(&mut self);
}

/// Reads a small value (a scalar, an order, a placer) by value into `into`.
pub(crate) fn read<T: DeserializeOwned>(into: &mut T, de: &mut Reader<'_>) -> postcard::Result<()> {
    *into = T::deserialize(&mut *de)?;
    Ok(())
}

impl<T: DeserializeOwned, const N: usize> DecodeInPlace for heapless::Vec<T, N> {
    fn decode_in_place(&mut self, de: &mut Reader<'_>) -> postcard::Result<()> {
        serde::de::DeserializeSeed::deserialize(IntoColumn(self), &mut *de)
    }

    fn reset(&mut self) {
        self.clear();
    }
}

/// Decodes a sequence into an existing buffer: a `heapless::Vec` (any length up to its
/// capacity) or a fixed slice (exactly its length).
pub(crate) struct IntoColumn<'a, C: ?Sized>(pub(crate) &'a mut C);

/// What [`IntoColumn`] fills.
trait Column {
    type Item: DeserializeOwned;
    /// Empties it (a `Vec`); nothing for a slice.
    fn start(&mut self);
    /// Puts item `i`; false when it does not fit.
    fn put(&mut self, i: usize, item: Self::Item) -> bool;
    /// Whether `n` items make a whole column.
    fn complete(&self, n: usize) -> bool;
}

impl<T: DeserializeOwned, const N: usize> Column for heapless::Vec<T, N> {
    type Item = T;
    fn start(&mut self) {
        self.clear();
    }
    fn put(&mut self, _: usize, item: T) -> bool {
        self.push(item).is_ok()
    }
    fn complete(&self, _: usize) -> bool {
        true
    }
}

impl<T: DeserializeOwned> Column for [T] {
    type Item = T;
    fn start(&mut self) {}
    fn put(&mut self, i: usize, item: T) -> bool {
        match self.get_mut(i) {
            Some(x) => {
                *x = item;
                true
            }
            None => false,
        }
    }
    fn complete(&self, n: usize) -> bool {
        n == self.len()
    }
}

impl<'de, C: Column + ?Sized> serde::de::DeserializeSeed<'de> for IntoColumn<'_, C> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de, C: Column + ?Sized> serde::de::Visitor<'de> for IntoColumn<'_, C> {
    type Value = ();

    fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("a column of the scheduler's state")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        use serde::de::Error;
        let n = seq.size_hint().unwrap_or(0);
        if !self.0.complete(n) {
            return Err(A::Error::custom("column of the wrong length"));
        }
        self.0.start();
        for i in 0..n {
            let Some(item) = seq.next_element::<C::Item>()? else {
                return Err(A::Error::custom("column ended early"));
            };
            if !self.0.put(i, item) {
                return Err(A::Error::custom("column longer than its capacity"));
            }
        }
        Ok(())
    }
}
