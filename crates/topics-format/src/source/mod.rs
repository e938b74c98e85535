//! The source archive: IDs, locations, v2 frames, the strict scan, append planning, legacy forms.
