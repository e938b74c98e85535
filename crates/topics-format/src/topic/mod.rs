//! Topic files: segmentation, the strict parse, the lossless document model, normalization and block links.
