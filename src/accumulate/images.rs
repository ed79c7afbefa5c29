use super::{Error, Indexed};
use crate::blocks::ImageBlock;

/// Accumulates images by index: a URL replaces the image (and clears data),
/// data appends (and clears the URL), the media type's last non-empty value wins.
/// A fragment carrying both a URL and data is applied URL first, so data wins.
pub type Images = Indexed<ImageBlock>;

impl Indexed<ImageBlock> {
    /// An empty accumulator.
    #[must_use]
    pub fn new(max_images: usize, max_bytes: usize) -> Self {
        Self::with_limits("max_images", max_images, max_bytes)
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
        let image = self.admit(index, incoming, "image")?;
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
        Ok(())
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
