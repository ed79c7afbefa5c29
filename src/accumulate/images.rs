use std::collections::BTreeMap;

use super::{too_many, Budget, Error};
use crate::blocks::ImageBlock;

/// Accumulates images by index: a URL replaces the image (and clears data),
/// data appends (and clears the URL), the media type's last non-empty value wins.
/// A fragment carrying both a URL and data is applied URL first, so data wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Images {
    images: BTreeMap<i64, ImageBlock>,
    max_images: usize,
    budget: Budget,
}

impl Images {
    /// An empty accumulator.
    #[must_use]
    pub fn new(max_images: usize, max_bytes: usize) -> Self {
        Self {
            images: BTreeMap::new(),
            max_images,
            budget: Budget::new("max_bytes", max_bytes),
        }
    }

    /// Adds one fragment of the image at `index`.
    ///
    /// # Errors
    /// [`Error::Limit`] when the fragment would cross a limit; nothing changes then.
    pub fn add(
        &mut self,
        index: i64,
        media_type: &str,
        url: &str,
        data: &str,
    ) -> Result<(), Error> {
        let incoming = media_type
            .len()
            .saturating_add(url.len())
            .saturating_add(data.len());
        let target = || format!("image at index {index}");
        let used = self.budget.check(incoming, target)?;
        if !self.images.contains_key(&index) && self.images.len() >= self.max_images {
            return Err(too_many("max_images", self.max_images, target()));
        }
        let image = self.images.entry(index).or_default();
        if !media_type.is_empty() {
            media_type.clone_into(&mut image.media_type);
        }
        if !url.is_empty() {
            url.clone_into(&mut image.url);
            image.data.clear();
        }
        if !data.is_empty() {
            image.data.push_str(data);
            image.url.clear();
        }
        self.budget.used = used;
        Ok(())
    }

    /// A fresh copy of every image, in ascending index order.
    #[must_use]
    pub fn blocks(&self) -> Vec<ImageBlock> {
        self.images.values().cloned().collect()
    }

    /// Every image with its index, in ascending index order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &ImageBlock)> {
        self.images.iter().map(|(k, v)| (*k, v))
    }

    /// The number of distinct indexes seen.
    #[must_use]
    pub fn len(&self) -> usize {
        self.images.len()
    }

    /// True until the first fragment.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }

    /// All bytes taken in so far (what `max_bytes` bounds).
    #[must_use]
    pub fn bytes_used(&self) -> usize {
        self.budget.used
    }

    /// Raises the count of bytes taken in to `used` (restoring a saved accumulator).
    pub fn restore_bytes_used(&mut self, used: usize) {
        self.budget.used = self.budget.used.max(used);
    }

    /// `(max_images, max_bytes)`.
    #[must_use]
    pub fn limits(&self) -> (usize, usize) {
        (self.max_images, self.budget.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_and_data_replace_each_other() {
        let mut im = Images::new(4, 1000);
        assert!(im.add(0, "image/png", "", "AAA").is_ok());
        assert!(im.add(0, "", "", "BBB").is_ok());
        assert_eq!(im.blocks()[0].data, "AAABBB");
        assert!(im.add(0, "", "https://x/y.png", "").is_ok());
        let b = &im.blocks()[0];
        assert_eq!(
            (b.url.as_str(), b.data.as_str(), b.media_type.as_str()),
            ("https://x/y.png", "", "image/png")
        );
        assert!(im.add(0, "image/jpeg", "", "C").is_ok());
        let b = &im.blocks()[0];
        assert_eq!(
            (b.url.as_str(), b.data.as_str(), b.media_type.as_str()),
            ("", "C", "image/jpeg")
        );
    }
}
