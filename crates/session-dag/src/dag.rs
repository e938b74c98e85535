//! The shape rules every [`crate::SessionStore`] shares: which nodes are live tips, and whether
//! an append would close a parent cycle. Pure functions over nodes in append order, so the
//! embedded store and other stores (the PostgreSQL one) answer `tips` and refuse cycles alike.

use std::collections::HashMap;

use crate::{Node, NodeId};

/// Whether appending `node_id` under `parent` would close a cycle, looking nodes up through
/// `lookup` (a store's nodes, possibly overlaid with nodes staged before it in the same batch).
///
/// Only a node some stored node names as its parent (a *dangling* parent ID) or a node that is
/// its own parent can close one, so a store calls this only for those.
pub fn closes_cycle<'a>(
    node_id: &NodeId,
    parent: Option<&'a NodeId>,
    lookup: impl Fn(&NodeId) -> Option<&'a Node>,
) -> bool {
    let found: Result<bool, std::convert::Infallible> =
        closes_cycle_by(node_id, parent, |id| Ok(lookup(id).and_then(|n| n.parent.clone())));
    found.unwrap_or_else(|never| match never {})
}

/// [`closes_cycle`] for a store that looks parents up fallibly (in a database): `parent_of`
/// gives the parent ID of a stored or staged node, `None` for a root or an absent node.
pub fn closes_cycle_by<E>(
    node_id: &NodeId,
    parent: Option<&NodeId>,
    mut parent_of: impl FnMut(&NodeId) -> Result<Option<NodeId>, E>,
) -> Result<bool, E> {
    let mut current = parent.cloned();
    while let Some(id) = current {
        if &id == node_id {
            return Ok(true);
        }
        current = parent_of(&id)?;
    }
    Ok(false)
}

/// The nearest live (not rewound) node at or above position `i`.
fn live_at_or_above(nodes: &[Node], index: &HashMap<NodeId, usize>, mut i: usize) -> Option<usize> {
    loop {
        if !nodes[i].rewound {
            return Some(i);
        }
        i = *index.get(nodes[i].parent.as_ref()?)?;
    }
}

/// The live tips of a session whose nodes are `nodes` (append order; only `id`, `parent`,
/// `rewound` and `created_at` are read) indexed by `index` (ID → position): the head (or its
/// nearest live ancestor) first, then every live node with no live child, newest `created_at`
/// first (later in append order first on ties).
pub fn tips(nodes: &[Node], index: &HashMap<NodeId, usize>, head: Option<&NodeId>) -> Vec<NodeId> {
    let mut has_live_child = vec![false; nodes.len()];
    for node in nodes {
        if !node.rewound
            && let Some(&parent) = node.parent.as_ref().and_then(|p| index.get(p))
            && let Some(live) = live_at_or_above(nodes, index, parent)
        {
            has_live_child[live] = true;
        }
    }
    let head = head.and_then(|h| index.get(h)).and_then(|&i| live_at_or_above(nodes, index, i));
    let mut others: Vec<usize> = (0..nodes.len())
        .filter(|&i| !nodes[i].rewound && !has_live_child[i] && Some(i) != head)
        .collect();
    others.sort_by(|&a, &b| nodes[b].created_at.cmp(&nodes[a].created_at).then_with(|| b.cmp(&a)));
    head.into_iter().chain(others).map(|i| nodes[i].id.clone()).collect()
}
